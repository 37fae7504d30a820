package pgstore

import (
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/store"
)

// blackHole is a TCP proxy to a server that, once cut, still accepts and
// reads but never answers (a hung server, a black-holed route).
type blackHole struct {
	ln    net.Listener
	to    string
	cut   atomic.Bool
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func newBlackHole(t *testing.T, to string) *blackHole {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{ln: ln, to: to}
	b.wg.Add(1)
	go b.serve()
	t.Cleanup(b.close)
	return b
}

func (b *blackHole) serve() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns = append(b.conns, c)
		b.mu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.pipe(c)
		}()
	}
}

// pipe forwards c to the server while not cut; cut, it swallows c's bytes.
func (b *blackHole) pipe(c net.Conn) {
	if b.cut.Load() {
		io.Copy(io.Discard, c)
		return
	}
	up, err := net.Dial("tcp", b.to)
	if err != nil {
		c.Close()
		return
	}
	b.mu.Lock()
	b.conns = append(b.conns, up)
	b.mu.Unlock()
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := up.Read(buf)
			if n > 0 && !b.cut.Load() {
				c.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 && !b.cut.Load() {
			up.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// close stops the proxy and every connection it holds.
func (b *blackHole) close() {
	b.ln.Close()
	b.mu.Lock()
	for _, c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// A Load from a server that takes the connection but never answers ends
// within the store's call timeout, with an error that says what to check.
func TestLoadFromAServerThatNeverAnswers(t *testing.T) {
	url := pgtest.NewDatabase(t)
	srv := pgtest.Start(t)
	bh := newBlackHole(t, "127.0.0.1:"+strconv.Itoa(srv.Port()))
	proxied := strings.Replace(url, "127.0.0.1:"+strconv.Itoa(srv.Port()), bh.ln.Addr().String(), 1)
	if proxied == url {
		t.Fatalf("cannot point %s at the proxy", url)
	}
	const timeout = 2 * time.Second
	s, err := Open(Options{URL: proxied, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	// The proxy's connections go first: a Load still stuck on one (the
	// failure this test looks for) ends, and Close does not wait on it.
	defer func() { bh.close(); s.Close() }()
	bh.cut.Store(true)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := s.Load(10, store.RecordFunc(func([]byte) (uint64, string, error) { return 0, "", nil }), func(uint64, []byte) error { return nil })
		done <- err
	}()
	var got error
	returned := false
	wait.Until(t, "Load to give up on the silent server", time.Minute, func() bool {
		select {
		case got = <-done:
			returned = true
		default:
		}
		return returned
	})
	took := time.Since(start)
	if got == nil || !strings.Contains(got.Error(), "no answer within 2s") || !strings.Contains(got.Error(), "check that the server is up") {
		t.Fatalf("Load from a silent server: %v; want an error saying it did not answer within 2s and what to check", got)
	}
	if took > 20*timeout {
		t.Fatalf("Load took %s to give up, want about the timeout (%s)", took, timeout)
	}
}
