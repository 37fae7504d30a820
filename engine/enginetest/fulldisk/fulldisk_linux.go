// Package fulldisk gives tests a real full disk: a small tmpfs to put a
// state dir on, and a file that fills it. It imports nothing of the engine,
// so the store's own tests use it too.
package fulldisk

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size (as mount takes it: "4m") on a new
// temporary directory, unmounted when the test ends. It needs root:
// without it the test is skipped, except under CI=true (CI runs as root),
// where it fails.
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	NeedRoot(t)
	dir := t.TempDir()
	Mount(t, dir, size)
	return dir
}

// NeedRoot skips t unless it runs as root, or fails it under CI=true (CI
// runs as root): mounting a tmpfs needs it.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test mounts a tmpfs and needs root; CI runs as root")
		}
		t.Skip("skipped: mounting a tmpfs for a full disk needs root (CI runs it as root)")
	}
}

// Mount mounts a tmpfs of size on dir, an existing empty directory,
// unmounted when the test ends (after the cleanups registered later). The
// caller has checked NeedRoot.
func Mount(t testing.TB, dir, size string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

// Fill writes a file in dir until the file system is full, then gives back
// slack bytes of it (room for the store's small writes). It returns the
// file's path: removing it makes room again.
func Fill(t testing.TB, dir string, slack int64) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	var n int64
	for {
		k, err := f.Write(chunk)
		n += int64(k)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(max(n-slack, 0)); err != nil {
		t.Fatal(err)
	}
	return path
}
