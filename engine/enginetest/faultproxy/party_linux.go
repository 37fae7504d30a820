// Naming a connection's party by the local process that opened it, from
// /proc: several nodes on one machine reach the same target through the
// same proxy, and only their sockets tell them apart.

package faultproxy

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ByProcess returns an Options.Party naming a connection by the process
// that holds its client end: pids maps each party to its process id now
// (0: not running). A connection none of them holds is the party "".
// Only for connections from this machine, in this network namespace.
func ByProcess(pids func() map[string]int) func(net.Conn) string {
	return func(c net.Conn) string {
		local, lok := c.LocalAddr().(*net.TCPAddr)
		remote, rok := c.RemoteAddr().(*net.TCPAddr)
		if !lok || !rok {
			return ""
		}
		inode := socketInode(remote.Port, local.Port)
		if inode == "" {
			return ""
		}
		want := "socket:[" + inode + "]"
		for party, pid := range pids() {
			if pid > 0 && holds(pid, want) {
				return party
			}
		}
		return ""
	}
}

// socketInode is the inode of the TCP socket whose local port is from and
// remote port is to ("" if none is listed).
func socketInode(from, to int) string {
	suffix := fmt.Sprintf(":%04X", from)
	remote := fmt.Sprintf(":%04X", to)
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) > 9 && strings.HasSuffix(fs[1], suffix) && strings.HasSuffix(fs[2], remote) {
				f.Close()
				return fs[9]
			}
		}
		f.Close()
	}
	return ""
}

// holds reports whether process pid has an open descriptor linked to
// target ("socket:[N]").
func holds(pid int, target string) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == target {
			return true
		}
	}
	return false
}
