// make test's promise that the tests' files are on tmpfs (Makefile, TEST_TMPFS).

package enginetest

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// tmpfsMagic is statfs(2)'s f_type of a tmpfs.
const tmpfsMagic = 0x01021994

// TestTempDirIsOnTmpfs: the tests' stores sync on commit as users' do, so
// make test puts TMPDIR on tmpfs, where a sync costs nothing; on a busy
// disk the suite waits several times its CPU time and misses its
// ten-minute budget. Under CI=true (make test from .ci/run) a TMPDIR on
// disk fails; elsewhere it skips, saying why.
func TestTempDirIsOnTmpfs(t *testing.T) {
	dir := t.TempDir()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatalf("statfs %s: %v", dir, err)
	}
	if fs.Type == tmpfsMagic {
		return
	}
	msg := fmt.Sprintf("TMPDIR %s is not on tmpfs (file system type %#x): run the tests with make test, "+
		"which puts TMPDIR on %s, or set TMPDIR to a directory on a tmpfs", os.TempDir(), fs.Type, "/dev/shm")
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
