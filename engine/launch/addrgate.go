// A bound on the API connections one client address may keep waiting.

package launch

// One client address may hold only a share of the API's TCP connections
// while they wait for a request, so that it cannot take every slot of
// max_connections with connections that never send one (docs/design.md
// §7.2, "Slow clients").

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
)

// waitingShare is the fraction of max_connections one address may hold
// waiting for a request: a quarter, so that three others still find room
// while one floods.
const waitingShare = 4

// waitingPerAddress is how many connections one address may hold waiting
// for a request on a listener of maxConns connections.
func waitingPerAddress(maxConns int) int { return max(1, maxConns/waitingShare) }

// addrGate counts, per client address, the TCP connections waiting for a
// request: accepted and not yet past their request headers (TLS handshake
// included), or idle between requests. A connection that would take its
// address over the limit is closed as soon as it is accepted. The counts
// are the gate's alone, under mu; http.Server reports each connection's
// state changes through track.
type addrGate struct {
	limit int
	log   *slog.Logger

	mu      sync.Mutex
	waiting map[netip.Addr]int
}

func newAddrGate(limit int, log *slog.Logger) *addrGate {
	return &addrGate{limit: limit, log: log, waiting: map[netip.Addr]int{}}
}

// gateConn is a connection the gate admitted; waiting says whether it
// counts against its address now, closed that it never will again (both
// guarded by the gate's mu).
type gateConn struct {
	net.Conn
	g       *addrGate
	addr    netip.Addr
	waiting bool
	closed  bool
}

// NetConn returns the wrapped connection.
func (c *gateConn) NetConn() net.Conn { return c.Conn }

// Close stops counting the connection, whoever closes it (the server's
// Shutdown closes idle ones without a state change).
func (c *gateConn) Close() error {
	c.g.close(c)
	return c.Conn.Close()
}

// listen wraps ln: its Accept closes connections over their address's
// limit and returns the next one.
func (g *addrGate) listen(ln net.Listener) net.Listener { return &gateListener{ln, g} }

type gateListener struct {
	net.Listener
	g *addrGate
}

func (l *gateListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if gc := l.g.admit(c); gc != nil {
			return gc, nil
		}
		c.Close()
	}
}

// admit counts c against its address, or returns nil when that address
// has its limit of waiting connections already.
func (g *addrGate) admit(c net.Conn) *gateConn {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		// Not an IP peer (no TCP listener gives one): nothing to count.
		return &gateConn{Conn: c, g: g}
	}
	gc := &gateConn{Conn: c, g: g, addr: ap.Addr().Unmap()}
	g.mu.Lock()
	n := g.waiting[gc.addr]
	if n >= g.limit {
		g.mu.Unlock()
		g.log.Debug("api connection refused: too many waiting for a request from one address",
			"remote", gc.addr.String(), "limit", g.limit)
		return nil
	}
	g.waiting[gc.addr] = n + 1
	gc.waiting = true
	g.mu.Unlock()
	return gc
}

// track is the http.Server's ConnState hook: a connection waits for a
// request when new or idle, and not while a request is read or served.
func (g *addrGate) track(c net.Conn, state http.ConnState) {
	gc, ok := c.(*gateConn)
	if !ok {
		return
	}
	switch state {
	case http.StateIdle:
		g.set(gc, true)
	case http.StateActive, http.StateHijacked, http.StateClosed:
		g.set(gc, false)
	}
}

// close stops counting c for good.
func (g *addrGate) close(c *gateConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setLocked(c, false)
	c.closed = true
}

// set makes c count against its address, or not.
func (g *addrGate) set(c *gateConn, waiting bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setLocked(c, waiting)
}

func (g *addrGate) setLocked(c *gateConn, waiting bool) {
	if !c.addr.IsValid() || c.waiting == waiting || c.closed {
		return
	}
	c.waiting = waiting
	if waiting {
		g.waiting[c.addr]++
		return
	}
	if g.waiting[c.addr]--; g.waiting[c.addr] <= 0 {
		delete(g.waiting, c.addr)
	}
}
