//go:build unix

package agent

import (
	"io"
	"io/fs"
	"syscall"
	"time"
)

// writeSmall creates path, which must not exist, and writes data to it
// with a single write(2): three system calls and one inode, where a
// temporary file and a rename cost an inode, a rename and more calls. A
// reader may find the file empty (between the create and the write) but,
// for a few bytes written at once to a new file, not partly written: the
// kernel copies them into the page cache before it grows the file's size,
// so a read sees size 0 or all of them. Readers still check that the
// content ends with the newline every writer puts last, and take an empty
// or unterminated file for one not written yet.
func writeSmall(path string, data []byte) error {
	fd, err := openFresh(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return writeClose(fd, path, data, nil)
}

// writeClose writes data to fd, open on path, with a single write(2)
// unless err (from preparing fd) is set, and closes fd. It returns the
// first error, as a *fs.PathError.
func writeClose(fd int, path string, data []byte, err error) error {
	if err == nil {
		var n int
		n, err = syscall.Write(fd, data)
		if err == nil && n < len(data) {
			err = io.ErrShortWrite
		}
	}
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// writeRecord writes data as the whole content of path with a single
// write(2), creating path if need be: in a recycled directory the file is
// there, empty, and opening it costs no inode (see recycle.go). A file
// that is not empty is truncated first, through the descriptor.
func writeRecord(path string, data []byte) error {
	fd, err := openRetry(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if err = syscall.Fstat(fd, &st); err == nil && st.Size != 0 {
		err = syscall.Ftruncate(fd, 0)
	}
	return writeClose(fd, path, data, err)
}

// appendSmall appends data to the existing file path with a single
// write(2) (see writeSmall for why readers see all of it or none).
func appendSmall(path string, data []byte) error {
	fd, err := openRetry(path, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return writeClose(fd, path, data, nil)
}

func openRetry(path string, flags int, perm uint32) (int, error) {
	for {
		fd, err := syscall.Open(path, flags, perm)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// readSmall returns the content of path, a state file of a few bytes (at
// most 4 KiB are read), with an open, a read or two and a close.
func readSmall(path string) ([]byte, error) {
	fd, err := openRetry(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var buf [4096]byte
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		n += m
		if m == 0 || n < len(buf) {
			break // a short read of a regular file is its end
		}
	}
	return append([]byte(nil), buf[:n]...), nil
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
