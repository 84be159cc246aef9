// Package storetest gives tests a small disk they can fill: a tmpfs
// mounted on a directory, and a filler file written until the kernel says
// ENOSPC. The store's, the controller's and the fault harness's full-disk
// tests share it. Needs root (CI runs the tests as root).
package storetest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// MountTmpfs mounts a tmpfs of size (mount(8)'s size=, "4m") on dir, an
// existing directory, and unmounts it when the test ends (registered now,
// so it runs after the cleanups registered later).
func MountTmpfs(t testing.TB, dir, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("mounting a small tmpfs needs root (CI runs the tests as root)")
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0755", "hora-test-disk", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs on %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// Filler is the file Fill writes in a directory.
const Filler = "filler"

// Fill appends zeros to dir/filler until the file system has no space
// left, halving the writes at the end to take the last pages.
func Fill(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, Filler), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for n := len(buf); n > 0; {
		if _, err := f.Write(buf[:n]); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				return err
			}
			n /= 2
		}
	}
	return nil
}

// Empty removes what Fill wrote.
func Empty(dir string) error {
	if err := os.Remove(filepath.Join(dir, Filler)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
