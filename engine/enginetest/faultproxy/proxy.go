// Package faultproxy is the tests' fault-injecting TCP proxy: it forwards
// every connection it accepts to one target and, on command, cuts,
// black-holes or delays the traffic of one party (who opened the
// connection), recording connections and bytes per party so that a test
// can show what a node sent, and when (docs/design.md §11).
package faultproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Kind is what a fault does to a party's traffic.
type Kind int

const (
	// Healed forwards bytes as they come.
	Healed Kind = iota
	// Cut closes the party's connections (a reset) and resets each new
	// one as soon as it is accepted: a peer that went away.
	Cut
	// BlackHole keeps the party's connections, and accepts new ones, but
	// drops every byte both ways: a network that lost its route. A
	// connection that lost a byte is broken for good: healing closes it,
	// as its peers would once they noticed.
	BlackHole
	// Delayed forwards each byte Fault.Delay after it was read, in order.
	Delayed
)

func (k Kind) String() string {
	switch k {
	case Healed:
		return "healed"
	case Cut:
		return "cut"
	case BlackHole:
		return "black-holed"
	case Delayed:
		return "delayed"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Fault is what happens to a party's traffic now.
type Fault struct {
	Kind  Kind
	Delay time.Duration // Delayed only
}

// Stats is what went through the proxy for one party.
type Stats struct {
	Conns int // connections accepted
	// Up is the bytes delivered to the target, Down those delivered back
	// to the party; Dropped those a black hole swallowed (both ways).
	Up, Down, Dropped int64
	// LastUp is when a byte was last delivered to the target (zero: never).
	LastUp time.Time
}

// Options configure a Proxy.
type Options struct {
	// Party names who opened an accepted connection (nil: every
	// connection is the party ""). It runs on the accepting goroutine.
	Party func(net.Conn) string
}

// Proxy listens on a loopback port and forwards to one target.
type Proxy struct {
	target string
	ln     net.Listener
	party  func(net.Conn) string
	wg     sync.WaitGroup // the accept loop and every link's goroutines

	// Guarded by mu.
	mu     sync.Mutex
	closed bool
	faults map[string]Fault
	stats  map[string]*Stats
	links  map[*link]struct{}
}

// New listens on a free loopback port and forwards each connection to
// target (host:port).
func New(target string, opts Options) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{target: target, ln: ln, party: opts.Party, faults: map[string]Fault{}, stats: map[string]*Stats{}, links: map[*link]struct{}{}}
	if p.party == nil {
		p.party = func(net.Conn) string { return "" }
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address to connect to instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set puts fault f on party's traffic, live connections included.
func (p *Proxy) Set(party string, f Fault) {
	p.mu.Lock()
	p.faults[party] = f
	var reset []*link
	for l := range p.links {
		if l.party != party {
			continue
		}
		if f.Kind == Cut || (f.Kind != BlackHole && l.broken) {
			reset = append(reset, l)
		}
	}
	p.mu.Unlock()
	for _, l := range reset {
		l.close(true)
	}
}

// Cut, BlackHole, Delay and Heal are Set with each kind.
func (p *Proxy) Cut(party string)       { p.Set(party, Fault{Kind: Cut}) }
func (p *Proxy) BlackHole(party string) { p.Set(party, Fault{Kind: BlackHole}) }
func (p *Proxy) Heal(party string)      { p.Set(party, Fault{}) }
func (p *Proxy) Delay(party string, d time.Duration) {
	p.Set(party, Fault{Kind: Delayed, Delay: d})
}

// Stats is what went through for party so far.
func (p *Proxy) Stats(party string) Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.stats[party]; s != nil {
		return *s
	}
	return Stats{}
}

// Close stops listening, closes every connection and waits for the
// proxy's goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, l := range links {
		l.close(false)
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient accept error (out of descriptors): the caller
			// retries its dial; so do we.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		party := p.party(c)
		p.mu.Lock()
		st := p.statsLocked(party)
		st.Conns++
		f, closed := p.faults[party], p.closed
		p.mu.Unlock()
		if closed || f.Kind == Cut {
			reset(c)
			continue
		}
		p.wg.Add(1)
		go p.open(c, party)
	}
}

func (p *Proxy) statsLocked(party string) *Stats {
	s := p.stats[party]
	if s == nil {
		s = &Stats{}
		p.stats[party] = s
	}
	return s
}

// faultOf is party's fault now.
func (p *Proxy) faultOf(party string) Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faults[party]
}

// reset closes c with a TCP reset, as a peer that is gone would.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
