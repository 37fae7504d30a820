package freeport

import (
	"fmt"
	"net"
	"testing"
)

// Ports come from below the ephemeral range, are free to listen on, and
// are never handed out twice by one process.
func TestPickBelowEphemeralRangeFreeAndNew(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 300 {
		port := For(t)
		if port < 1024 || port >= low {
			t.Fatalf("port %d is outside %d–%d", port, low-span, low-1)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
	}
	port := For(t)
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("listen on the port Pick gave: %v", err)
	}
	l.Close()
}

// A port another listener holds is not handed out.
func TestPickSkipsHeldPort(t *testing.T) {
	low := ephemeralLow()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	// Hold 2,000 ports of the span: none of the next 200 picks may be one.
	taken := map[int]bool{}
	for p := low - span; p < low && len(held) < 2000; p++ {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			held = append(held, l)
			taken[p] = true
		}
	}
	for range 200 {
		if port := For(t); taken[port] {
			t.Fatalf("port %d is held by this test, yet was handed out", port)
		}
	}
}
