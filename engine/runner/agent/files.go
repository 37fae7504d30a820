// Small files written and read with single system calls.

//go:build unix

package agent

import (
	"io"
	"io/fs"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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
	return openRetryAt(unix.AT_FDCWD, path, flags, perm)
}

// openRetryAt is openRetry of path relative to the directory open on dirfd.
func openRetryAt(dirfd int, path string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, path, flags, perm)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// readSmall returns the content of path, a state file of a few bytes (at
// most 4 KiB are read), with an open, a read or two and a close.
func readSmall(path string) ([]byte, error) {
	return readSmallAt(unix.AT_FDCWD, path)
}

// readSmallAt is readSmall of path relative to the directory open on dirfd
// (unix.AT_FDCWD: the working directory, or path is absolute).
func readSmallAt(dirfd int, path string) ([]byte, error) {
	fd, err := openRetryAt(dirfd, path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var buf [4096]byte
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
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

// ctrDir is a container's directory as status reads it: name relative to
// the directory open on fd. "runner list" opens the state root once and
// names each container by its id, so that every file it reads costs the
// kernel a walk of two names instead of one per component of the
// absolute path (and Go no filepath.Join); the other verbs pass an
// absolute path with fd unix.AT_FDCWD.
type ctrDir struct {
	fd   int
	name string
}

// absDir is dir, an absolute path, as a ctrDir.
func absDir(dir string) ctrDir { return ctrDir{fd: unix.AT_FDCWD, name: dir} }

// file is the name of the container's file relative to d.fd.
func (d ctrDir) file(name string) string { return d.name + "/" + name }

// read is readSmall of the container's file.
func (d ctrDir) read(name string) ([]byte, error) { return readSmallAt(d.fd, d.file(name)) }

// modTime is the modification time of the container's file (of the
// directory itself for ""), zero when it cannot be read.
func (d ctrDir) modTime(name string) time.Time {
	path := d.name
	if name != "" {
		path = d.file(name)
	}
	var st unix.Stat_t
	for {
		err := unix.Fstatat(d.fd, path, &st, 0)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return time.Time{}
		}
	}
	return time.Unix(st.Mtim.Unix()).UTC()
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
