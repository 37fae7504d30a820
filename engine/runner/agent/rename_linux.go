// Renaming without replacing the target (Linux).

package agent

import "golang.org/x/sys/unix"

// renameNoReplace renames oldpath to newpath, failing with EEXIST when
// newpath exists (for a directory, even an empty one).
func renameNoReplace(oldpath, newpath string) error {
	for {
		err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
		if err != unix.EINTR {
			return err
		}
	}
}
