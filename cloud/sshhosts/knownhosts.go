// Host keys checked against a known_hosts file that is re-read when it changes.

package sshhosts

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/engine/sshexec"
)

// knownHostsFile checks host keys against a known_hosts file, re-read when
// its size or modification time changes (checked before each check, that
// is before each connection), so that an operator fixing a changed host
// key needs no restart.
type knownHostsFile struct {
	path string
	log  *slog.Logger

	mu    sync.Mutex
	cb    ssh.HostKeyCallback
	size  int64
	mtime time.Time
}

// newKnownHostsFile loads path; it must be readable now.
func newKnownHostsFile(path string, log *slog.Logger) (*knownHostsFile, error) {
	k := &knownHostsFile{path: path, log: log}
	if _, err := k.current(); err != nil {
		return nil, err
	}
	return k, nil
}

// check is an ssh.HostKeyCallback.
func (k *knownHostsFile) check(host string, remote net.Addr, key ssh.PublicKey) error {
	cb, err := k.current()
	if err != nil {
		return err
	}
	return cb(host, remote, key)
}

// current returns the callback for the file as it is now. A file that
// cannot be read or parsed any more keeps the last good contents (logged):
// an editor's half-written file must not lock every host out.
func (k *knownHostsFile) current() (ssh.HostKeyCallback, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	fi, err := os.Stat(k.path)
	if err == nil && k.cb != nil && fi.Size() == k.size && fi.ModTime().Equal(k.mtime) {
		return k.cb, nil
	}
	var cb ssh.HostKeyCallback
	if err == nil {
		cb, err = sshexec.KnownHosts(k.path)
	}
	if err != nil {
		if k.cb != nil {
			k.log.Warn("sshhosts: cannot re-read known_hosts; keeping the last good copy", "path", k.path, "err", err)
			return k.cb, nil
		}
		return nil, fmt.Errorf("known_hosts: %w", err)
	}
	if k.cb != nil {
		k.log.Info("sshhosts: known_hosts changed; re-read", "path", k.path)
	}
	k.cb, k.size, k.mtime = cb, fi.Size(), fi.ModTime()
	return cb, nil
}
