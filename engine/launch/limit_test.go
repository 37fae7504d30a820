package launch

import (
	"net"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
)

// TestLimitListener: past its limit the listener takes no connection until
// one closes; Close ends a waiting Accept.
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := limitListen(inner, 1)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial()
	first, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	dial()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	select {
	case <-accepted:
		t.Fatal("a second connection was accepted while the first is open")
	case <-time.After(100 * time.Millisecond):
	}
	first.Close()
	first.Close() // a second Close gives back nothing more
	select {
	case c := <-accepted:
		if c == nil {
			t.Fatal("Accept failed")
		}
		c.Close()
	case <-time.After(wait.Budget(10 * time.Second)):
		t.Fatal("the second connection was not accepted after the first closed")
	}

	// A waiting Accept returns when the listener closes.
	blocked := make(chan error, 1)
	go func() {
		// The first may take the connection dialled below; the second
		// waits for a slot that only Close ends.
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			_, err = ln.Accept()
		}
		blocked <- err
	}()
	dial()
	ln.Close()
	select {
	case err := <-blocked:
		if err == nil {
			t.Fatal("Accept after Close succeeded")
		}
	case <-time.After(wait.Budget(10 * time.Second)):
		t.Fatal("Accept did not return after Close")
	}
}
