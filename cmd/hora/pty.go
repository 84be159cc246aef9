package main

// A step's task on a pseudo-terminal (srun --pty, qsub -I): the task is
// the session leader of a new pty, srun's own terminal is put in raw mode
// and bytes are copied both ways, so that line editing, ^C and job control
// happen in the task's shell as on a login. The window size follows the
// caller's terminal (SIGWINCH). On SSH nodes the pty is the node's, asked
// of its sshd by horad (nodes/ssh/pty.go): the bytes and the window sizes
// travel through horad (api.StepInput, api.StepFrame).

import (
	"context"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"hora/api"
)

// openPty opens a new pseudo-terminal pair.
func openPty() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	n := -1
	rc, err := master.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) {
			if err = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); err == nil {
				n, err = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
			}
		})
		if err == nil {
			err = cerr
		}
	}
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

// terminalFd is f's descriptor when f is a terminal.
func terminalFd(r io.Reader) (int, bool) {
	f, ok := r.(*os.File)
	if !ok {
		return 0, false
	}
	fd := int(f.Fd())
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return fd, err == nil
}

// makeRaw puts the terminal fd in raw mode (cfmakeraw) and returns the
// function that restores it.
func makeRaw(fd int) (func(), error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}

// copyWinsize gives the pty the caller terminal's window size.
func copyWinsize(from int, to *os.File) {
	ws, err := unix.IoctlGetWinsize(from, unix.TIOCGWINSZ)
	if err != nil {
		return
	}
	if rc, err := to.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _ = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, ws) })
	}
}

// attachPty runs task t on a new pty: its stdin, stdout and stderr are the
// pty's slave, of which it is the controlling terminal (a new session,
// hence no process group of srun's choosing). The output is copied until
// the task and whatever it left behind have closed the slave; l.restore
// puts the caller's terminal back.
func (l *launch) attachPty(t *task) error {
	if l.grant.Remote {
		l.attachRemotePty(t)
		return nil
	}
	master, slave, err := openPty()
	if err != nil {
		return err
	}
	t.cmd.Stdin, t.cmd.Stdout, t.cmd.Stderr = slave, slave, slave
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	t.parentEnds = append(t.parentEnds, slave)
	var undo []func()
	if fd, ok := terminalFd(l.env.Stdin); ok {
		copyWinsize(fd, master)
		if restore, err := makeRaw(fd); err == nil {
			undo = append(undo, restore)
		}
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-winch:
					copyWinsize(fd, master)
				case <-stop:
					return
				}
			}
		}()
		undo = append(undo, func() { signal.Stop(winch); close(stop) })
	}
	l.restore = func() {
		for _, f := range undo {
			f()
		}
	}
	go func() { _, _ = io.Copy(master, l.env.Stdin) }() // ends with the caller's stdin
	l.readers.Add(1)
	go func() {
		defer l.readers.Done()
		// EIO once every end of the slave is closed: the session is over.
		buf := make([]byte, 32<<10)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				l.outMu.Lock()
				_, _ = l.env.Stdout.Write(buf[:n])
				l.outMu.Unlock()
			}
			if err != nil {
				master.Close()
				return
			}
		}
	}()
	return nil
}

// attachRemotePty runs task t on a pty of its SSH node: what is typed here
// is its stdin (sent by startRemote as for any remote task), what comes
// back is written as it comes, the caller's terminal is raw meanwhile, and
// its size is sent along (followWindow).
func (l *launch) attachRemotePty(t *task) {
	t.pty = &api.StepPty{Term: l.env.Getenv("TERM")}
	t.cmd.Stdin = readerOnly{l.env.Stdin}
	l.ptyFd = -1
	if fd, ok := terminalFd(l.env.Stdin); ok {
		l.ptyFd = fd
		if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
			t.pty.Rows, t.pty.Cols = int(ws.Row), int(ws.Col)
		}
		if restore, err := makeRaw(fd); err == nil {
			l.restore = restore
		}
	}
}

// followWindow sends the caller terminal's size to a remote pty task each
// time it changes (SIGWINCH), until ctx ends; a change since t's size was
// read (before the task started) is sent at once.
func (l *launch) followWindow(ctx context.Context, cl *api.Client, t *task) {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	g := l.grant
	sent := *t.pty
	send := func() {
		ws, err := unix.IoctlGetWinsize(l.ptyFd, unix.TIOCGWINSZ)
		if err != nil || (int(ws.Row) == sent.Rows && int(ws.Col) == sent.Cols) {
			return
		}
		sent.Rows, sent.Cols = int(ws.Row), int(ws.Col)
		size := &api.StepPty{Rows: sent.Rows, Cols: sent.Cols}
		_ = cl.StepInput(ctx, api.StepInput{JobID: g.JobID, StepID: g.StepID, Task: t.id, Resize: size})
	}
	send()
	for {
		select {
		case <-winch:
			send()
		case <-ctx.Done():
			return
		}
	}
}

// readerOnly hides the Close of the caller's stdin from sendInput, which
// closes the readers it is given.
type readerOnly struct{ io.Reader }
