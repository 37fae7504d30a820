// The state dir: created, made private, its group for the socket.

package launch

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"dispatch-tui/engine/config"
)

// prepareStateDir creates the state dir and makes it private: 0700, or
// 0710 with dispatcher.socket_group so that the group's members can reach
// the socket in it (and nothing else: every file in it is 0600). It
// refuses a state dir that belongs to another user.
func prepareStateDir(d *config.Dispatcher) error {
	dir := d.StateDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state dir (dispatcher.state_dir): %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("state dir %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("state dir %s belongs to uid %d, not to this user (uid %d)", dir, st.Uid, os.Geteuid())
	}
	mode := os.FileMode(0o700)
	if d.SocketGroup != "" {
		gid, err := groupID(d.SocketGroup)
		if err != nil {
			return err
		}
		if err := os.Chown(dir, -1, gid); err != nil {
			return fmt.Errorf("give state dir %s to group %s: %w", dir, d.SocketGroup, err)
		}
		mode = 0o710
	}
	if fi.Mode().Perm() != mode {
		if err := os.Chmod(dir, mode); err != nil {
			return fmt.Errorf("make state dir %s private: %w", dir, err)
		}
	}
	return nil
}

// groupID looks up dispatcher.socket_group (a name or a number).
func groupID(name string) (int, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		if g, err = user.LookupGroupId(name); err != nil {
			return 0, fmt.Errorf("dispatcher.socket_group %q: no such group", name)
		}
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return 0, fmt.Errorf("dispatcher.socket_group %q: gid %q: %w", name, g.Gid, err)
	}
	return gid, nil
}

// inGroup reports whether the user uid has gid as its primary or a
// supplementary group.
func inGroup(uid, primary uint32, gid int) bool {
	if int(primary) == gid {
		return true
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return false
	}
	ids, err := u.GroupIds()
	if err != nil {
		return false
	}
	want := strconv.Itoa(gid)
	for _, id := range ids {
		if id == want {
			return true
		}
	}
	return false
}

// PrepareStateDir creates cfg's state dir as New does, for a caller that
// builds a driver with NewDriver: the local driver keeps its instances
// there, and the cluster identity is kept there.
func PrepareStateDir(cfg *config.Config) error { return prepareStateDir(&cfg.Dispatcher) }
