// "runner logs": a container's output, its tail or its last bytes.

//go:build unix

package agent

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"dispatch-tui/engine/runner"
)

// logs writes a container's output, stdout then stderr (their last tail
// lines when tail > 0, at most maxBytes of their end when maxBytes > 0),
// and returns its exit code and how many bytes maxBytes dropped from the
// start (runner.DroppedFor; 0 when the tail asked for did not reach the
// cut). Only the part written is read: a large output costs its files'
// sizes and the tail, never its whole.
func (a *agent) logs(id string, tail int, maxBytes int64) (code int, dropped int64) {
	dir, code := a.containerDir("logs", id)
	if dir == "" {
		return code, 0
	}
	var files []*os.File
	var sizes []int64
	for _, name := range []string{fileStdout, fileStderr} {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return a.fail(1, "runner logs %s: %v", id, err), 0
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return a.fail(1, "runner logs %s: %v", id, err), 0
		}
		files = append(files, f)
		sizes = append(sizes, fi.Size())
	}
	cat := &concatReaderAt{parts: files, sizes: sizes}
	total := cat.size()
	cut := runner.DroppedFor(total, maxBytes)
	var off int64
	if tail > 0 {
		var err error
		// The lines are looked for in what the limit keeps only.
		sub := io.NewSectionReader(cat, cut, total-cut)
		if off, err = tailOffset(sub, total-cut, tail, 32<<10); err != nil {
			return a.fail(1, "runner logs %s: %v", id, err), 0
		}
	}
	if off == 0 {
		dropped = cut // what was asked for begins before the cut
	}
	if _, err := io.Copy(a.stdout, io.NewSectionReader(cat, cut+off, total-cut-off)); err != nil {
		return a.fail(1, "runner logs %s: %v", id, err), 0
	}
	return 0, dropped
}

// concatReaderAt reads its parts (of the given sizes) as one.
type concatReaderAt struct {
	parts []*os.File
	sizes []int64
}

func (c *concatReaderAt) size() int64 {
	var n int64
	for _, s := range c.sizes {
		n += s
	}
	return n
}

func (c *concatReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for i, part := range c.parts {
		if len(p) == 0 {
			break
		}
		if off >= c.sizes[i] {
			off -= c.sizes[i]
			continue
		}
		want := min(int64(len(p)), c.sizes[i]-off)
		m, err := part.ReadAt(p[:want], off)
		n += m
		if err != nil && !(errors.Is(err, io.EOF) && int64(m) == want) {
			return n, err
		}
		p = p[m:]
		off = 0
	}
	if len(p) > 0 {
		return n, io.EOF
	}
	return n, nil
}

// tailOffset returns the offset in r (size bytes) where its last n lines
// begin. A newline ending the data does not start another line.
func tailOffset(r io.ReaderAt, size int64, n, chunk int) (int64, error) {
	if n <= 0 || size == 0 {
		return 0, nil
	}
	buf := make([]byte, chunk)
	seen := 0
	for pos := size; pos > 0; {
		k := int(min(int64(chunk), pos))
		pos -= int64(k)
		if _, err := r.ReadAt(buf[:k], pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := k - 1; i >= 0; i-- {
			if buf[i] != '\n' || pos+int64(i) == size-1 {
				continue
			}
			seen++
			if seen == n {
				return pos + int64(i) + 1, nil
			}
		}
	}
	return 0, nil
}
