// Package secretfile decides whether a file may hold a secret (an API
// token, a config file holding one, a TLS or SSH private key), as OpenSSH
// does for private keys: the file must belong to the dispatcher's user (or
// root) and be closed to group and others. Whoever can read such a file
// can drive the dispatcher or its hosts; whoever owns it can rewrite it,
// whatever its mode, and put their own token or key in its place.
package secretfile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// Check refuses the secret file at path, described by fi (of os.Stat, so
// a symbolic link is judged by its target), when another user owns it or
// group or others may access it. The error says what to run to fix it.
func Check(path string, fi fs.FileInfo) error {
	self := os.Geteuid()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != self && st.Uid != 0 {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d) or root, and its owner could rewrite it: run chown %d %s (or chown root)", path, st.Uid, self, self, path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s is accessible by group or others (mode %04o): run chmod 600 %s", path, perm, path)
	}
	return nil
}

// Stat is Check on the file at path as it is now.
func Stat(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return Check(path, fi)
}
