package ssh

import (
	gossh "golang.org/x/crypto/ssh"

	"hora/nodes"
)

// A task on a pseudo-terminal of its node (srun --pty, qsub -I on an SSH
// node): its session asks sshd for a pty ("pty-req", RFC 4254 §6.2), as
// `ssh -tt` does, before the task's command (shTask with stdin "pty") is
// run in it. sshd makes the pty the controlling terminal of the session's
// shell, whose background task shares it; an interactive shell takes the
// terminal's foreground for itself. What the caller types arrives as the
// session's stdin and everything the task writes comes back as stdout;
// the caller's window size follows as "window-change" requests (§6.7).

// requestPty asks for the session's pty with the caller's terminal type
// and size. The modes are the ones a fresh Linux pty has (echo, canonical
// input, signals from ^C ^\ ^Z, CR-NL on output), which the local path
// (cmd/hora/pty.go) gives the task too.
func requestPty(sess *gossh.Session, p *nodes.Pty) error {
	rows, cols := p.Rows, p.Cols
	if rows <= 0 || cols <= 0 {
		rows, cols = 24, 80
	}
	modes := gossh.TerminalModes{
		gossh.ECHO: 1, gossh.ICANON: 1, gossh.ISIG: 1, gossh.ICRNL: 1, gossh.ONLCR: 1, gossh.OPOST: 1,
		gossh.TTY_OP_ISPEED: 38400, gossh.TTY_OP_OSPEED: 38400,
	}
	return sess.RequestPty(p.Term, rows, cols, modes)
}
