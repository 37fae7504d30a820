// One proxied connection: two directions, each a reader that applies the
// party's fault as bytes arrive and a writer that delivers them when due.

package faultproxy

import (
	"net"
	"sync"
	"time"
)

// dialTimeout bounds the proxy's own connection to the target.
const dialTimeout = 5 * time.Second

type link struct {
	p              *Proxy
	party          string
	client, server net.Conn
	done           chan struct{} // closed by close
	closeOnce      sync.Once

	// Guarded by p.mu.
	broken bool // a black hole swallowed some of its bytes
	ended  int  // directions whose source ended and were delivered
}

// chunk is bytes read from one side, to be written to the other at due.
type chunk struct {
	data []byte
	due  time.Time
}

// open dials the target for client and forwards both ways until either
// side ends or the link is closed.
func (p *Proxy) open(client net.Conn, party string) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, dialTimeout)
	if err != nil {
		reset(client) // as the target itself would refuse
		return
	}
	l := &link{p: p, party: party, client: client, server: server, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed || p.faults[party].Kind == Cut {
		p.mu.Unlock()
		reset(client)
		reset(server)
		return
	}
	p.links[l] = struct{}{}
	p.mu.Unlock()
	p.wg.Add(2)
	go l.pipe(client, server, true)
	go l.pipe(server, client, false)
}

// pipe reads src and hands each read to a writer to dst (up: client to
// target).
func (l *link) pipe(src, dst net.Conn, up bool) {
	defer l.p.wg.Done()
	chunks := make(chan chunk, 256)
	l.p.wg.Add(1)
	go l.deliver(chunks, dst, up)
	defer close(chunks)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			f := l.p.faultOf(l.party)
			switch f.Kind {
			case BlackHole, Cut: // Cut: the link is being closed
				l.p.mu.Lock()
				l.broken = true
				l.p.statsLocked(l.party).Dropped += int64(n)
				l.p.mu.Unlock()
			default:
				c := chunk{data: append([]byte(nil), buf[:n]...), due: time.Now()}
				if f.Kind == Delayed {
					c.due = c.due.Add(f.Delay)
				}
				select {
				case chunks <- c:
				case <-l.done:
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// deliver writes each chunk to dst once due, in order; when the source
// has ended and everything is written, it half-closes dst.
func (l *link) deliver(chunks <-chan chunk, dst net.Conn, up bool) {
	defer l.p.wg.Done()
	for c := range chunks {
		if wait := time.Until(c.due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-l.done:
				t.Stop()
				return
			}
		}
		if _, err := dst.Write(c.data); err != nil {
			l.close(false)
			return
		}
		l.p.mu.Lock()
		st := l.p.statsLocked(l.party)
		if up {
			st.Up += int64(len(c.data))
			st.LastUp = time.Now()
		} else {
			st.Down += int64(len(c.data))
		}
		l.p.mu.Unlock()
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	l.p.mu.Lock()
	l.ended++
	both := l.ended == 2
	l.p.mu.Unlock()
	if both {
		l.close(false)
	}
}

// close ends the link at once, with a reset when rst (a fault), else
// with an ordinary close.
func (l *link) close(rst bool) {
	l.closeOnce.Do(func() {
		close(l.done)
		if rst {
			reset(l.client)
			reset(l.server)
		} else {
			l.client.Close()
			l.server.Close()
		}
		l.p.mu.Lock()
		delete(l.p.links, l)
		l.p.mu.Unlock()
	})
}
