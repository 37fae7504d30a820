// Renaming without replacing, where the system has no such call.

//go:build unix && !linux

package agent

import "syscall"

// renameNoReplace is only available on Linux; elsewhere directories and
// files are not recycled.
func renameNoReplace(oldpath, newpath string) error { return syscall.ENOSYS }
