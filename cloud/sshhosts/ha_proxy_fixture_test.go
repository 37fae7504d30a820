//go:build linux

// The HA fixture's fault proxies: between each node and PostgreSQL, and
// between the nodes and each host.

package sshhosts

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"dispatch-tui/engine/enginetest/faultproxy"
)

// proxyHosts puts a proxy before each host, its party the node whose
// process opened the connection, and writes the nodes' known_hosts: each
// host's key under its proxy's address (the address the nodes dial, and
// so the instance's id).
func (he *haEnv) proxyHosts(env *sshdEnv, hs []Host) {
	t := he.t
	var kh strings.Builder
	for i, h := range hs {
		p, err := faultproxy.New(h.Address, faultproxy.Options{Party: faultproxy.ByProcess(he.pids)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		he.hostVia = append(he.hostVia, p)
		he.hostDirs = append(he.hostDirs, h.WorkDir)
		fmt.Fprintf(&kh, "[127.0.0.1]:%s %s\n", portOf(p.Addr()), env.servers[i].hostPub)
	}
	if err := os.WriteFile(filepath.Join(env.dir, "known_hosts.proxied"), []byte(kh.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// proxyStore puts a proxy of the next node's own before the database and
// returns the URL that reaches it.
func (he *haEnv) proxyStore(dbURL string) string {
	t := he.t
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.New(u.Host, faultproxy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	he.pgProxy = append(he.pgProxy, p)
	u.Host = p.Addr()
	return u.String()
}

// pids names each running node's process, for the hosts' proxies.
func (he *haEnv) pids() map[string]int {
	m := make(map[string]int, len(he.nodes))
	for _, p := range he.nodes {
		m[p.name] = int(p.pid.Load())
	}
	return m
}

// hostsCut cuts (or heals) node p from every host.
func (he *haEnv) hostsCut(p *haProc, cut bool) {
	for _, hp := range he.hostVia {
		if cut {
			hp.Cut(p.name)
		} else {
			hp.Heal(p.name)
		}
	}
}

// hostStats is what node p sent to the hosts: bytes in all, and when the
// last byte reached a host.
func (he *haEnv) hostStats(p *haProc) faultproxy.Stats {
	var all faultproxy.Stats
	for _, hp := range he.hostVia {
		s := hp.Stats(p.name)
		all.Conns += s.Conns
		all.Up += s.Up
		all.Down += s.Down
		all.Dropped += s.Dropped
		if s.LastUp.After(all.LastUp) {
			all.LastUp = s.LastUp
		}
	}
	return all
}

func portOf(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }
