// Package freeport finds a loopback TCP port for a test's server (a
// daemon, sshd, PostgreSQL) to listen on.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
)

// For returns Pick's port, failing t if there is none.
func For(t testing.TB) int {
	t.Helper()
	port, err := Pick()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// Pick returns a loopback port that no listener holds now, that this
// process has not handed out before, and that lies below the kernel's
// range of ephemeral ports. A port the kernel picks for "port 0" is in
// that range, where an outgoing connection of any test running beside may
// take it between this check and the server's bind; below it only another
// listener can, and the random choice makes that unlikely.
func Pick() (int, error) {
	hi := ephemeralLow()
	lo := max(hi-span, 1024)
	for range 200 {
		port := lo + rand.IntN(hi-lo)
		if _, dup := given.LoadOrStore(port, true); dup {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // another process holds it: try another
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free loopback port in %d–%d after 200 tries: free some ports or widen the kernel's ip_local_port_range", lo, hi-1)
}

// span is how many ports below the ephemeral range Pick chooses from.
const span = 12000

// given holds every port Pick has tried: a port closed at once is free
// again, and two servers of one test were once given the same one.
var given sync.Map

// ephemeralLow is the first port of the kernel's ephemeral range, or
// Linux's default when it cannot be read or leaves too little below it.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var lo, hi int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &lo, &hi); err != nil || lo < 1024+span {
		return 32768
	}
	return lo
}
