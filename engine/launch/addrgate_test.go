package launch

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/freeport"
	"dispatch-tui/engine/enginetest/wait"
)

// dialFrom connects to addr from the local address ip.
func dialFrom(ip, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return d.Dial("tcp", addr)
}

// clientFrom is an HTTP client whose connections come from ip.
func clientFrom(ip string) *http.Client {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

// summaryFrom asks for /v1/summary from ip and returns the status.
func summaryFrom(ip, listen string) (int, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+listen+"/v1/summary", nil)
	req.Header.Set("Authorization", "Bearer tok")
	c := clientFrom(ip)
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestOneAddressCannotTakeEverySlot: connections that send nothing from
// one address take at most a quarter of max_connections; the rest from
// that address are closed at once, and another address is served while
// they wait. Once they go, the address is served again.
func TestOneAddressCannotTakeEverySlot(t *testing.T) {
	cfg := e2eConfig(t.TempDir())
	cfg.Cloud.Driver = "fake"
	cfg.Dispatcher.Listen = fmt.Sprintf("127.0.0.1:%d", freeport.For(t))
	cfg.Dispatcher.Token = "tok"
	cfg.Dispatcher.MaxConnections = 8
	limit := waitingPerAddress(cfg.Dispatcher.MaxConnections) // 2
	// Timeouts far past the test's deadlines: only the limit can free a slot.
	timeouts := &Timeouts{ReadHeader: 2 * time.Minute, Read: 2 * time.Minute, Idle: 2 * time.Minute}
	serveTest(t, cfg, timeouts)

	n := cfg.Dispatcher.MaxConnections
	closed := make(chan int, n)
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := dialFrom("127.0.0.1", cfg.Dispatcher.Listen)
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		t.Cleanup(func() { c.Close() })
		go func() {
			// Returns when the server closes the connection, or at the
			// test's end.
			c.Read(make([]byte, 1))
			closed <- i
		}()
	}
	deadline := time.After(wait.Budget(20 * time.Second))
	seen := 0
	for seen < n-limit {
		select {
		case <-closed:
			seen++
		case <-deadline:
			t.Fatalf("%d of %d silent connections from 127.0.0.1 closed by the server in 20s; want %d (the limit is %d waiting per address)", seen, n, n-limit, limit)
		}
	}

	// Another address is served while 127.0.0.1's keep their slots.
	if code, err := summaryFrom("127.0.0.2", cfg.Dispatcher.Listen); err != nil || code != http.StatusOK {
		t.Fatalf("127.0.0.2 while 127.0.0.1 holds its limit: status %d, %v", code, err)
	}
	select {
	case i := <-closed:
		t.Fatalf("connection %d of the %d within the limit was closed too", i, limit)
	default:
	}

	// Once they go, 127.0.0.1 is served again: the gate forgets them.
	for _, c := range conns {
		c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		code, err := summaryFrom("127.0.0.1", cfg.Dispatcher.Listen)
		if err == nil && code == http.StatusOK {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("127.0.0.1 not served again after its connections closed: status %d, %v", code, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// remoteConn is a connection from a chosen address.
type remoteConn struct {
	net.Conn
	remote net.Addr
}

func (c remoteConn) RemoteAddr() net.Addr { return c.remote }

// TestAddrGateCounts: a connection counts against its address while new
// or idle, not while a request is served, and never after it closes;
// addresses are counted apart.
func TestAddrGateCounts(t *testing.T) {
	g := newAddrGate(1, slog.New(slog.DiscardHandler))
	from := func(ip string) net.Conn {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return remoteConn{a, &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}}
	}
	first := g.admit(from("10.0.0.1"))
	if first == nil {
		t.Fatal("the first connection of an address was refused")
	}
	if g.admit(from("10.0.0.1")) != nil {
		t.Fatal("a second new connection over the limit of 1 was admitted")
	}
	if g.admit(from("::ffff:10.0.0.2")) == nil {
		t.Fatal("another address was refused")
	}
	g.track(first, http.StateActive)
	second := g.admit(from("10.0.0.1"))
	if second == nil {
		t.Fatal("refused while the address's only connection is being served")
	}
	g.track(second, http.StateActive)
	g.track(first, http.StateIdle)
	if g.admit(from("10.0.0.1")) != nil {
		t.Fatal("admitted while an idle connection holds the address's limit")
	}
	first.Close()
	g.track(first, http.StateIdle) // a late report after the close
	g.track(first, http.StateClosed)
	if g.admit(from("10.0.0.1")) == nil {
		t.Fatal("refused after the idle connection closed")
	}
}
