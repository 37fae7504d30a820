// Tests of the fault-injecting proxy against an echo server of the test's own.

package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
)

// echo is a TCP server that writes back what it reads, until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func newProxy(t *testing.T, opts Options) *Proxy {
	t.Helper()
	p, err := New(echo(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads it back, within a generous deadline.
func roundTrip(c net.Conn, msg string) error {
	c.SetDeadline(time.Now().Add(20 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte(msg)); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if string(got) != msg {
		return errors.New("echoed " + string(got))
	}
	return nil
}

// dead reports whether c was closed by the proxy: a read ends in an error
// (EOF or a reset) rather than waiting.
func dead(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func TestForwardsAndCounts(t *testing.T) {
	p := newProxy(t, Options{})
	c := dial(t, p)
	before := time.Now()
	if err := roundTrip(c, "hello"); err != nil {
		t.Fatal(err)
	}
	// The echo may reach the client before the proxy counts the bytes it
	// delivered either way: each count follows its write.
	wait.Until(t, "5 bytes counted each way", 10*time.Second, func() bool {
		s := p.Stats("")
		return s.Up == 5 && s.Down == 5
	})
	s := p.Stats("")
	if s.Conns != 1 || s.Up != 5 || s.Down != 5 || s.Dropped != 0 || s.LastUp.Before(before) {
		t.Fatalf("stats after one 5-byte round trip: %+v", s)
	}
}

func TestCutResetsLiveAndNewConnectionsUntilHealed(t *testing.T) {
	p := newProxy(t, Options{})
	c := dial(t, p)
	if err := roundTrip(c, "before"); err != nil {
		t.Fatal(err)
	}
	p.Cut("")
	if !dead(c) {
		t.Fatal("a live connection survived the cut")
	}
	// Accepted by the kernel, then reset by the proxy: the dial itself
	// may already see the reset.
	c2, err := net.Dial("tcp", p.Addr())
	if err == nil {
		defer c2.Close()
	}
	if err == nil && !dead(c2) {
		t.Fatal("a connection opened during the cut was forwarded")
	}
	up := p.Stats("").Up
	p.Heal("")
	if err := roundTrip(dial(t, p), "after"); err != nil {
		t.Fatalf("after healing: %v", err)
	}
	// The echo may come back before the proxy counts what it sent.
	wait.Until(t, "5 more bytes counted up", 10*time.Second, func() bool { return p.Stats("").Up == up+5 })
	if s := p.Stats(""); s.Conns != 3 {
		t.Fatalf("stats: %+v, want 3 connections", s)
	}
}

func TestBlackHoleDropsBytesAndHealingClosesWhatItBroke(t *testing.T) {
	p := newProxy(t, Options{})
	c := dial(t, p)
	if err := roundTrip(c, "before"); err != nil {
		t.Fatal(err)
	}
	// The echo may reach the client before the proxy counts the bytes it
	// delivered: each count follows its write.
	wait.Until(t, "6 bytes counted each way", 10*time.Second, func() bool {
		s := p.Stats("")
		return s.Up == 6 && s.Down == 6
	})
	p.BlackHole("")
	up := p.Stats("").Up
	if _, err := c.Write([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the black hole to swallow 4 bytes", 10*time.Second, func() bool { return p.Stats("").Dropped == 4 })
	// Nothing comes back, and the connection stays open.
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := c.Read(make([]byte, 8)); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read through a black hole: %d bytes, %v; want a timeout", n, err)
	}
	if s := p.Stats(""); s.Up != up {
		t.Fatalf("%d bytes reached the target through the black hole", s.Up-up)
	}
	// A connection opened meanwhile is accepted and swallowed too.
	c2 := dial(t, p)
	if _, err := c2.Write([]byte("gone")); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the black hole to swallow 8 bytes", 10*time.Second, func() bool { return p.Stats("").Dropped == 8 })
	p.Heal("")
	if !dead(c) || !dead(c2) {
		t.Fatal("a connection that lost bytes lived on after healing")
	}
	if err := roundTrip(dial(t, p), "after"); err != nil {
		t.Fatalf("after healing: %v", err)
	}
}

func TestDelayHoldsBytesInOrder(t *testing.T) {
	const d = 300 * time.Millisecond
	p := newProxy(t, Options{})
	c := dial(t, p)
	p.Delay("", d)
	start := time.Now()
	var want bytes.Buffer
	for _, s := range []string{"one ", "two ", "three"} {
		want.WriteString(s)
		if _, err := c.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]byte, want.Len())
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	// Delayed on the way to the target and again on the way back.
	if took := time.Since(start); took < 2*d {
		t.Fatalf("echo came back after %s, want ≥ %s", took, 2*d)
	}
	if string(got) != want.String() {
		t.Fatalf("echoed %q, want %q", got, want.String())
	}
	p.Heal("")
	if err := roundTrip(c, "healed"); err != nil {
		t.Fatalf("the delayed connection after healing: %v", err)
	}
}

func TestCloseEndsEveryConnection(t *testing.T) {
	p, err := New(echo(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p)
	if err := roundTrip(c, "x"); err != nil {
		t.Fatal(err)
	}
	p.Delay("", time.Hour) // a writer waiting on a chunk must end too
	c.Write([]byte("held"))
	p.Close()
	if !dead(c) {
		t.Fatal("a connection outlived the proxy")
	}
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Fatal("the proxy still accepts after Close")
	}
}
