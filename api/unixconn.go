package api

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// The client reaches horad's Unix socket with the socket system calls, not
// package net: net, with net/netip and unique that it initialises, costs
// every client process its start-up work and page faults, and a CLI
// command lives a few milliseconds (docs/scale.md, "Client start-up"). An
// *os.File over a non-blocking socket is served by the runtime's poller as
// net's connections are, deadlines included, which is all the transport
// needs.

// conn is what the transport needs of a connection.
type conn interface {
	io.ReadWriteCloser
	SetDeadline(time.Time) error
}

// dialUnix connects to the stream socket at path. As with net.Dial, a
// Unix socket connects or fails at once (ENOENT, ECONNREFUSED, EAGAIN for a
// full backlog): there is nothing to wait for. The error is the errno.
func dialUnix(path string) (conn, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "unix:"+path)
	if f == nil {
		syscall.Close(fd)
		return nil, syscall.EBADF
	}
	return f, nil
}

// isConnError tells an error of the connection itself (reset, closed by
// the daemon) from a malformed answer: an *os.File wraps the former in a
// *fs.PathError.
func isConnError(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe)
}
