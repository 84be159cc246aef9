package main

// A step's task on a pseudo-terminal (srun --pty, qsub -I): the task is
// the session leader of a new pty, srun's own terminal is put in raw mode
// and bytes are copied both ways, so that line editing, ^C and job control
// happen in the task's shell as on a login. The window size follows the
// caller's terminal (SIGWINCH).

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
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
		return errors.New("a pseudo-terminal needs a local node: tasks on SSH nodes run without one")
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
