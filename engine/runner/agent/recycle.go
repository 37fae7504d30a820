// Reusing forgotten containers' directories and files instead of creating new ones.

//go:build unix

package agent

// Recycling container directories. Creating a file costs an inode, and on
// ext4 without a journal allocating one scans past every inode freed in the
// last seconds: at a thousand short containers a second, creating the
// files and the directory of each new container was most of the runner's
// CPU. So "forget" empties a container's directory and keeps it, with its
// files, in <StateDir>/free~/ ('~' is not valid in an id, so list never
// sees it); "start" takes a directory from there when it can.
//
// An emptied directory holds stderr and pid_start, empty, under their own
// names, and stdout as "spare~stdout": the supervisor claims a directory by
// creating stdout exclusively, and in a recycled one it renames the spare
// into place instead (openFresh), which claims it just the same. Every
// other file is removed. Renames and truncations are what recycling costs,
// so a file is only renamed when its name changes and only truncated when
// it is not empty.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

const (
	freeDir     = "free~"
	sparePrefix = "spare~"
	// maxFree bounds the pool, so a burst of containers does not leave
	// its directories behind for good.
	maxFree = 4096
)

// keptName is the name a file of a finished container is kept under in
// a recycled directory; "" means the file is removed.
func keptName(name string) string {
	switch name {
	case fileStdout, sparePrefix + fileStdout:
		return sparePrefix + fileStdout
	case fileStderr, filePIDStart:
		return name
	}
	return ""
}

// recycle empties gone, the directory of a forgotten container already
// renamed out of list's sight, and moves it to the free pool. On error
// the caller removes gone instead.
func recycle(root, gone string) error {
	pool := filepath.Join(root, freeDir)
	var st syscall.Stat_t
	// A directory's link count is 2 + its subdirectories (1 once too
	// many to count).
	if err := syscall.Stat(pool, &st); err == nil && (st.Nlink < 2 || st.Nlink-2 >= maxFree) {
		return errors.New("free pool full")
	}
	ents, err := os.ReadDir(gone)
	if err != nil {
		return err
	}
	// Files already under the name they are kept under go first, so that
	// another file kept for the same name is the one removed.
	sort.SliceStable(ents, func(i, j int) bool {
		return ents[i].Name() == keptName(ents[i].Name()) && ents[j].Name() != keptName(ents[j].Name())
	})
	kept := map[string]bool{}
	for _, e := range ents {
		path := filepath.Join(gone, e.Name())
		keep := keptName(e.Name())
		if keep == "" || kept[keep] || !e.Type().IsRegular() {
			if err := os.RemoveAll(path); err != nil {
				return err
			}
			continue
		}
		if err := syscall.Stat(path, &st); err != nil {
			return &os.PathError{Op: "stat", Path: path, Err: err}
		}
		if st.Size != 0 {
			if err := emptyFile(path); err != nil {
				return err
			}
		}
		if e.Name() != keep {
			if err := os.Rename(path, filepath.Join(gone, keep)); err != nil {
				return err
			}
		}
		kept[keep] = true
	}
	// Moved with the same call claim uses: where it does not work (not
	// Linux, or a file system without it) nothing is kept.
	dst := filepath.Join(pool, filepath.Base(gone))
	err = renameNoReplace(gone, dst)
	if errors.Is(err, syscall.ENOENT) {
		if err := os.Mkdir(pool, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		err = renameNoReplace(gone, dst)
	}
	return err
}

// emptyFile truncates path to nothing through an open descriptor, not
// truncate(2): ext4 marks a file truncated to zero for allocation and
// writeback at its next close, which with truncate(2) would be the close
// after the next container wrote it (its pid_start, on every start). Here
// that close is this one, with nothing left to write.
func emptyFile(path string) error {
	fd, err := openRetry(path, syscall.O_WRONLY|syscall.O_TRUNC|syscall.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	return syscall.Close(fd)
}

// freePool hands out recycled directories to one start or batch.
type freePool struct {
	dir   string
	dirf  *os.File
	names []string
	done  bool // nothing more to read (or recycling does not work here)
}

func newFreePool(root string) *freePool { return &freePool{dir: filepath.Join(root, freeDir)} }

// claim moves a recycled directory to dir, which must not exist: true when
// it did; false with no error when the pool is empty (the caller makes a
// new directory); an error wrapping fs.ErrExist when dir exists.
func (p *freePool) claim(dir string, now time.Time) (bool, error) {
	for {
		if len(p.names) == 0 && !p.fill() {
			return false, nil
		}
		src := filepath.Join(p.dir, p.names[0])
		p.names = p.names[1:]
		// list takes a directory without a pid record for a container that
		// is starting while it is new: make it new before it appears.
		if err := os.Chtimes(src, now, now); err != nil {
			continue // taken by another runner since it was listed
		}
		err := renameNoReplace(src, dir)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.ENOENT):
			continue // taken by another runner
		case errors.Is(err, syscall.EEXIST), errors.Is(err, syscall.ENOTEMPTY):
			return false, &os.PathError{Op: "mkdir", Path: dir, Err: os.ErrExist}
		default: // not supported here: make new directories
			p.done = true
			return false, nil
		}
	}
}

func (p *freePool) fill() bool {
	if p.done {
		return false
	}
	if p.dirf == nil {
		f, err := os.Open(p.dir)
		if err != nil {
			p.done = true
			return false
		}
		p.dirf = f
	}
	names, err := p.dirf.Readdirnames(256)
	p.names = names
	if err == io.EOF || len(names) == 0 {
		p.done = true
	}
	return len(names) > 0
}

func (p *freePool) close() {
	if p.dirf != nil {
		p.dirf.Close()
	}
}

// makeDir makes the directory of a new container: a recycled one when the
// pool has one, else a new one. The error wraps fs.ErrExist when the
// container exists.
func (p *freePool) makeDir(dir string, now time.Time) error {
	if ok, err := p.claim(dir, now); ok || err != nil {
		return err
	}
	return os.Mkdir(dir, 0o700)
}

// openFresh opens path, which a writer is about to create, with flags
// (O_CREAT, maybe O_EXCL): when a recycled directory keeps an empty spare
// for it, the spare is renamed into place (failing, like O_EXCL, if path
// exists) and opened without creating anything.
func openFresh(path string, flags int, perm uint32) (int, error) {
	spare := filepath.Join(filepath.Dir(path), sparePrefix+filepath.Base(path))
	if renameNoReplace(spare, path) == nil {
		flags &^= syscall.O_CREAT | syscall.O_EXCL
	}
	return openRetry(path, flags, perm)
}

// clean runs "runner clean": it removes the free pool.
func (a *agent) clean() int {
	root, exists, err := a.stateRoot(false)
	if err != nil {
		return a.fail(1, "runner clean: %v", err)
	}
	if !exists {
		return 0
	}
	// Out of the way first, so that no start takes from it meanwhile.
	gone := filepath.Join(root, fmt.Sprintf("clean~%d", os.Getpid()))
	if err := os.Rename(filepath.Join(root, freeDir), gone); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0
		}
		return a.fail(1, "runner clean: %v", err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return a.fail(1, "runner clean: %v", err)
	}
	return 0
}
