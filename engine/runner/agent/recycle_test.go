//go:build linux

package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"dispatch-tui/engine/runner"
)

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// poolDirs returns the recycled directories in the free pool and checks
// that each holds only the kept files, empty.
func poolDirs(t *testing.T, root string) []string {
	t.Helper()
	pool := filepath.Join(root, freeDir)
	dirs := dirEntries(t, pool)
	for _, d := range dirs {
		for _, f := range dirEntries(t, filepath.Join(pool, d)) {
			fi, err := os.Stat(filepath.Join(pool, d, f))
			if err != nil {
				t.Fatal(err)
			}
			if keptName(f) != f || fi.Size() != 0 {
				t.Fatalf("pool directory %s holds %s (%d bytes)", d, f, fi.Size())
			}
		}
	}
	return dirs
}

func TestForgottenDirectoriesAreReused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	root := h.env.StateDir
	h.start(runner.Spec{ID: "first", Command: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
	h.waitState("first", runner.StateExited)
	dirIno := inode(t, filepath.Join(root, "first"))
	stdoutIno := inode(t, filepath.Join(root, "first", fileStdout))
	pidIno := inode(t, filepath.Join(root, "first", filePIDStart))

	code, _, errs := h.run("", "forget", "first")
	wantCode(t, "forget", code, errs, 0, "")
	dirs := poolDirs(t, root)
	if len(dirs) != 1 {
		t.Fatalf("pool holds %v, want one directory", dirs)
	}
	files := dirEntries(t, filepath.Join(root, freeDir, dirs[0]))
	want := []string{filePIDStart, sparePrefix + fileStdout, fileStderr}
	if !reflect.DeepEqual(files, want) {
		t.Fatalf("recycled directory holds %v, want %v", files, want)
	}
	if sts := h.listQuiet(); len(sts) != 0 {
		t.Fatalf("list shows %+v after forget", sts)
	}

	// The next container gets the same directory and files, with nothing
	// of the first one left in them.
	h.start(runner.Spec{ID: "second", Command: []string{"sh", "-c", "echo again"}})
	st := h.waitState("second", runner.StateExited)
	if st.ExitCode != 0 || st.StartedAt.IsZero() || st.FinishedAt.IsZero() {
		t.Fatalf("second: %+v", st)
	}
	dir := filepath.Join(root, "second")
	if got := inode(t, dir); got != dirIno {
		t.Fatalf("second container's directory is inode %d, not the recycled %d", got, dirIno)
	}
	if got := inode(t, filepath.Join(dir, fileStdout)); got != stdoutIno {
		t.Fatalf("stdout is a new inode %d, not the recycled %d", got, stdoutIno)
	}
	if got := inode(t, filepath.Join(dir, filePIDStart)); got != pidIno {
		t.Fatalf("pid_start is a new inode %d, not the recycled %d", got, pidIno)
	}
	if out := h.logs("second"); out != "again\n" {
		t.Fatalf("second's logs: %q", out)
	}
	if names := dirEntries(t, dir); !reflect.DeepEqual(names, []string{filePIDStart, fileStderr, fileStdout}) {
		t.Fatalf("second's directory holds %v", names)
	}
	if dirs := poolDirs(t, root); len(dirs) != 0 {
		t.Fatalf("pool still holds %v", dirs)
	}
}

// recycle keeps stdout, stderr and pid_start, empty, whatever the
// directory holds (a finished container's files, a failed start's, a
// container's with an image), and removes everything else.
func TestRecycleLayouts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		files map[string]string
		// kept maps a file of the result to the file whose inode it is.
		kept map[string]string
	}{
		{"this runner", map[string]string{fileStdout: "out\n", fileStderr: "", filePIDStart: "1 - 2 - 3\n0 x\n"},
			map[string]string{sparePrefix + fileStdout: fileStdout, fileStderr: fileStderr, filePIDStart: filePIDStart}},
		{"failed start", map[string]string{fileStdout: "", fileStderr: "", filePIDStart: "", fileExit: "x\n", fileError: "no\n"},
			map[string]string{sparePrefix + fileStdout: fileStdout, fileStderr: fileStderr, filePIDStart: filePIDStart}},
		{"recycled before", map[string]string{sparePrefix + fileStdout: "", fileStderr: "", filePIDStart: ""},
			map[string]string{sparePrefix + fileStdout: sparePrefix + fileStdout, fileStderr: fileStderr, filePIDStart: filePIDStart}},
		{"with an image", map[string]string{fileStdout: "", fileStderr: "err\n", filePIDStart: "1 - 2 - 3\n0 x\n", fileSpec: "{}\n"},
			map[string]string{sparePrefix + fileStdout: fileStdout, fileStderr: fileStderr, filePIDStart: filePIDStart}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			gone := filepath.Join(root, "forget~c~1")
			if err := os.Mkdir(gone, 0o700); err != nil {
				t.Fatal(err)
			}
			inodes := map[string]uint64{}
			for name, content := range tc.files {
				path := filepath.Join(gone, name)
				if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
				inodes[name] = inode(t, path)
			}
			if err := recycle(root, gone); err != nil {
				t.Fatal(err)
			}
			dirs := poolDirs(t, root)
			if len(dirs) != 1 {
				t.Fatalf("pool holds %v", dirs)
			}
			got := dirEntries(t, filepath.Join(root, freeDir, dirs[0]))
			if want := []string{filePIDStart, sparePrefix + fileStdout, fileStderr}; !slices.Equal(got, want) {
				t.Fatalf("recycled directory holds %v, want %v", got, want)
			}
			for name, from := range tc.kept {
				if ino := inode(t, filepath.Join(root, freeDir, dirs[0], name)); ino != inodes[from] {
					t.Errorf("%s is inode %d, want %s's %d", name, ino, from, inodes[from])
				}
			}
		})
	}
}

func TestRecycledDirectoriesInBatches(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := &runner.Client{Exec: mainExecutor{h}, Path: "/runner"}
	ctx := context.Background()
	// Three directories in the pool, one with files other than those kept
	// (an image's spec.json, a file of an earlier runner): not kept.
	var specs []runner.Spec
	for i := range 3 {
		specs = append(specs, runner.Spec{ID: fmt.Sprintf("old%d", i), Command: []string{"true"}})
	}
	if _, err := c.StartMany(ctx, specs); err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		h.waitState(s.ID, runner.StateExited)
	}
	for _, f := range []string{fileSpec, fileError} {
		if err := os.WriteFile(filepath.Join(root(h), "old2", f), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range specs {
		code, _, errs := h.run("", "forget", s.ID)
		wantCode(t, "forget "+s.ID, code, errs, 0, "")
	}
	if dirs := poolDirs(t, root(h)); len(dirs) != 3 {
		t.Fatalf("pool holds %v", dirs)
	}

	// A batch of five takes the three and makes two; a start of an id that
	// exists fails without using up a pooled directory.
	specs = specs[:0]
	for i := range 5 {
		specs = append(specs, runner.Spec{ID: fmt.Sprintf("new%d", i), Command: []string{"sh", "-c", fmt.Sprintf("echo %d; exit %d", i, i)}})
	}
	errs, err := c.StartMany(ctx, specs)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if e != nil {
			t.Fatalf("start %s: %v", specs[i].ID, e)
		}
	}
	for i, s := range specs {
		st := h.waitState(s.ID, runner.StateExited)
		if st.ExitCode != i {
			t.Fatalf("%s: exit %d, want %d", s.ID, st.ExitCode, i)
		}
		if out := h.logs(s.ID); out != fmt.Sprintf("%d\n", i) {
			t.Fatalf("%s logs %q", s.ID, out)
		}
	}
	if dirs := poolDirs(t, root(h)); len(dirs) != 0 {
		t.Fatalf("pool holds %v after the batch", dirs)
	}
	code, _, errStr := h.run("", "forget", "new0")
	wantCode(t, "forget new0", code, errStr, 0, "")
	if errs, err := c.StartMany(ctx, specs[1:2]); err != nil || errs[0] == nil || !strings.Contains(errs[0].Error(), "already exists") {
		t.Fatalf("duplicate start: %v %v", errs, err)
	}
	if dirs := poolDirs(t, root(h)); len(dirs) != 1 {
		t.Fatalf("a refused start changed the pool: %v", dirs)
	}
	var ids []string
	for _, st := range h.listQuiet() {
		ids = append(ids, st.ID)
	}
	if !slices.Equal(ids, []string{"new1", "new2", "new3", "new4"}) {
		t.Fatalf("list: %v", ids)
	}
}

func TestFreePoolIsBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	pool := filepath.Join(root(h), freeDir)
	if err := os.MkdirAll(pool, 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range maxFree {
		if err := os.Mkdir(filepath.Join(pool, fmt.Sprint(i)), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h.start(runner.Spec{ID: "c", Command: []string{"true"}})
	h.waitState("c", runner.StateExited)
	code, _, errs := h.run("", "forget", "c")
	wantCode(t, "forget", code, errs, 0, "")
	if n := len(dirEntries(t, pool)); n != maxFree {
		t.Fatalf("pool holds %d directories, want %d (full: the forgotten one is removed)", n, maxFree)
	}
	if names := dirEntries(t, root(h)); !reflect.DeepEqual(names, []string{freeDir}) {
		t.Fatalf("state dir holds %v", names)
	}
}

func root(h *harness) string { return h.env.StateDir }

func TestCleanRemovesThePool(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	code, _, errs := h.run("", "clean")
	wantCode(t, "clean without a state dir", code, errs, 0, "")
	h.start(runner.Spec{ID: "c", Command: []string{"true"}})
	h.waitState("c", runner.StateExited)
	code, _, errs = h.run("", "forget", "c")
	wantCode(t, "forget", code, errs, 0, "")
	code, _, errs = h.run("", "clean")
	wantCode(t, "clean", code, errs, 0, "")
	if names := dirEntries(t, root(h)); len(names) != 0 {
		t.Fatalf("state dir holds %v after clean", names)
	}
	code, _, errs = h.run("", "clean")
	wantCode(t, "clean again", code, errs, 0, "")
}
