package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Names inside a step directory. See README.md for who writes what.
const (
	shepherdFile  = "shepherd"  // horad: the shepherd's identity (trusted)
	terminateFile = "terminate" // horad: grace of a pending Terminate
	limitFile     = "limit"     // horad: a moved time limit, ns from the step's start (SetTimeLimit)
	userDirName   = "user"      // owned by the job's user; written by the shepherd
	scriptFile    = "script"
	pidFile       = "pid"    // shepherd: the job's process group id
	pidFileSize   = 24       // the pid file's length: the pid, padded with spaces, and a newline
	statusFile    = "status" // shepherd: how the step ended
	maxStateBytes = 64 << 10 // user-written files are read with this cap
)

// shepherdRecord is what horad knows about a shepherd from having started
// it. It lives in the horad-owned part of the step directory, so the job's
// user cannot redirect horad's signals to other processes by editing it.
type shepherdRecord struct {
	Pid int `json:"pid"`
	// StartTicks is field 22 of /proc/<pid>/stat; together with Pid it
	// names one process even after the pid number is reused.
	StartTicks uint64    `json:"start_ticks"`
	UID        uint32    `json:"uid"`
	GID        uint32    `json:"gid"`
	Started    time.Time `json:"started"`
	// Run is the run of the job the shepherd was started for; it must
	// agree with the directory's name (absent, 0, in a LegacyRun's).
	Run int `json:"run"`
}

// statusRecord is the shepherd's account of a step's end.
type statusRecord struct {
	ExitCode int       `json:"exit_code"`
	Signal   int       `json:"signal"`
	TimedOut bool      `json:"timed_out"`
	OOM      bool      `json:"oom,omitempty"`
	MaxRSSKB int64     `json:"max_rss_kb,omitempty"`
	CPUNs    int64     `json:"cpu_ns,omitempty"`
	Pid      int       `json:"pid"`
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended"`
	Err      string    `json:"err,omitempty"`
}

// validNode keeps node names from escaping the state directory.
func validNode(node string) error {
	if node == "" || node == "." || node == ".." || strings.ContainsAny(node, "/\x00") {
		return fmt.Errorf("invalid node name %q", node)
	}
	return nil
}

// writeFileAtomic writes data to a temporary name and renames it over path,
// so a reader sees either nothing or the whole file, even if the writer dies.
// durable adds an fsync, for records that matter after a machine crash; pid
// records do not (the processes they name die with the machine), and an
// fsync costs about as much as the rest of a launch's bookkeeping.
func writeFileAtomic(path string, data []byte, perm os.FileMode, durable bool) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	// Explicit mode: horad's umask must not hide these files from the
	// shepherd, which runs as another user.
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil && durable {
		err = f.Sync()
	}
	return closeTmp(f, err, tmp, path)
}

// closeTmp closes f, the temporary file tmp, after err (the first error in
// writing it), renames it over path unless path is "", and removes it if
// anything failed.
func closeTmp(f *os.File, err error, tmp, path string) error {
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && path != "" {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// shepherdRecordSize is the shepherd record's reserved length: its JSON is
// under 200 bytes, padded with spaces (JSON's whitespace) to this.
const shepherdRecordSize = 256

// writeShepherdRecord writes rec into the space startShepherd reserved.
func writeShepherdRecord(dir string, rec shepherdRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if len(b) >= shepherdRecordSize {
		return fmt.Errorf("shepherd record of %d bytes: more than its %d reserved", len(b), shepherdRecordSize)
	}
	b = append(b, strings.Repeat(" ", shepherdRecordSize-1-len(b))+"\n"...)
	return writeReserved(filepath.Join(dir, shepherdFile+".tmp"), filepath.Join(dir, shepherdFile), b)
}

// pidRecord is the pid file's content: exactly pidFileSize bytes.
func pidRecord(pid int) []byte {
	return fmt.Appendf(nil, "%-*d\n", pidFileSize-1, pid)
}

// reserveFile creates tmp with size bytes of spaces, so that writeReserved
// can later put as many bytes in it without taking new space.
func reserveFile(tmp string, size int, perm os.FileMode) error {
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	err = f.Chmod(perm) // as writeFileAtomic: not the umask's
	if err == nil {
		_, err = f.Write([]byte(strings.Repeat(" ", size)))
	}
	return closeTmp(f, err, tmp, "")
}

// writeReserved writes data over the start of the file reserveFile made at
// tmp and renames it over path: a reader of path sees the whole record or
// none, and a full disk cannot refuse it.
func writeReserved(tmp, path string, data []byte) error {
	// The job runs already and may have put a FIFO in its place:
	// O_NONBLOCK makes that an error rather than a shepherd blocked.
	f, err := os.OpenFile(tmp, os.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	return closeTmp(f, err, tmp, path)
}

// readSmallFile reads a file that the job's user may have tampered with:
// symlinks are not followed, FIFOs and devices are refused (opening with
// O_NONBLOCK keeps a FIFO from blocking horad), and the size is capped.
func readSmallFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, maxStateBytes))
}

// mkdirMode creates dir with exactly mode, whatever the umask.
func mkdirMode(dir string, mode os.FileMode) error {
	if err := os.Mkdir(dir, mode); err != nil {
		return err
	}
	return os.Chmod(dir, mode)
}

func readJSON(path string, v any) error {
	b, err := readSmallFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func writeJSONAtomic(path string, v any, perm os.FileMode, durable bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'), perm, durable)
}

// procStat holds the fields of /proc/<pid>/stat that identify a process.
type procStat struct {
	State      byte
	Ppid       int
	Pgrp       int
	StartTicks uint64
}

var errNoProcess = errors.New("no such process")

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			return procStat{}, errNoProcess
		}
		return procStat{}, err
	}
	// comm (field 2) is in parentheses and may itself contain ") ", so
	// the fixed fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field n is f[n-3].
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	var ps procStat
	ps.State = f[0][0]
	ps.Ppid, _ = strconv.Atoi(f[1])
	ps.Pgrp, _ = strconv.Atoi(f[2])
	ps.StartTicks, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	ps.StartTicks = uint64(int64(ps.StartTicks) - bootOffsetTicks())
	return ps, nil
}

// bootOffsetTicks is this process's time namespace's CLOCK_BOOTTIME
// offset in clock ticks (USER_HZ, 100 on Linux). The kernel shows a
// process's start time in /proc/<pid>/stat shifted by the reader's offset,
// so a horad restarted in another time namespace (a container, the fault
// harness's clock jumps) took every live shepherd for a reused pid and
// lost its steps: start times are kept as the initial namespace sees them.
var bootOffsetTicks = sync.OnceValue(func() int64 {
	b, err := os.ReadFile("/proc/self/timens_offsets")
	if err != nil {
		return 0 // a kernel without time namespaces
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "boottime" {
			sec, _ := strconv.ParseInt(f[1], 10, 64)
			nsec, _ := strconv.ParseInt(f[2], 10, 64)
			return sec*100 + nsec/10_000_000
		}
	}
	return 0
})
