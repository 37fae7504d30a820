package queue

import (
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/store"
	"dispatch-tui/engine/store/boltstore"
)

// outage is a real store whose flushes fail while down, remembering when
// (on the fake clock) each flush reached it.
type outage struct {
	store.Store
	clk *clock.Fake

	mu    sync.Mutex
	down  bool
	tries []time.Time
}

var errServerDown = errors.New("connection refused: the server is down")

func (o *outage) Flush(b *store.Batch) error {
	o.mu.Lock()
	o.tries = append(o.tries, o.clk.Now())
	down := o.down
	o.mu.Unlock()
	if down {
		return errServerDown
	}
	return o.Store.Flush(b)
}

func (o *outage) setDown(down bool) {
	o.mu.Lock()
	o.down = down
	o.mu.Unlock()
}

// gaps returns the seconds between the flushes that reached the store
// from the i-th on.
func (o *outage) gaps(i int) []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []int
	for j := i + 1; j < len(o.tries); j++ {
		out = append(out, int(o.tries[j].Sub(o.tries[j-1])/time.Second))
	}
	return out
}

func (o *outage) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.tries)
}

// While the store cannot write, a pass a second tries it again after 1 s,
// then 2, 4, 8, 16 and every 30 s (not at every pass), a verb's flush at
// once; the store stays unavailable since the first failure; once a write
// gets through the back-off starts again from the first gap, and what was
// kept in memory is in the store.
func TestStoreRetryBacksOff(t *testing.T) {
	clk := clock.NewFake(t0)
	path := filepath.Join(t.TempDir(), "queue.db")
	s, err := boltstore.Open(boltstore.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	st := &outage{Store: s, clk: clk}
	q, err := Open(Options{Store: st, Clock: clk, StoreRetry: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { q.Close() }()
	c, err := q.Submit(spec("true"), "test")
	if err != nil {
		t.Fatal(err)
	}
	// pass locks or unlocks the container, a second after the last pass.
	pass := func() error {
		clk.Advance(time.Second)
		return q.Pass(func(tx *Tx) { toggleLock(t, tx, tx.Get(c.ID)) })
	}
	if err := pass(); err != nil {
		t.Fatal(err)
	}

	st.setDown(true)
	from := st.count()
	failedAt := clk.Now().Add(time.Second)
	for range 120 {
		err := pass()
		if err == nil {
			t.Fatal("a pass wrote while the store was down")
		}
		if h := q.StoreHealth(); !h.UnavailableSince.Equal(failedAt) {
			t.Fatalf("store unavailable since %v; want since the first failure, %v", h.UnavailableSince, failedAt)
		}
	}
	if got, want := st.gaps(from), []int{1, 2, 4, 8, 16, 30, 30}; !slices.Equal(got, want) {
		t.Fatalf("in 120 passes a second apart on a store that is down, the flushes reached it %v s apart; want %v", got, want)
	}
	if h := q.StoreHealth(); h.WriteFailures != 8 {
		t.Fatalf("%d failed writes counted; want the 8 tried", h.WriteFailures)
	}

	// A verb's flush tries at once, and counts.
	n := st.count()
	if err := q.Flush(); !errors.Is(err, errServerDown) {
		t.Fatalf("a verb's flush while the store is down: %v; want the store's error", err)
	}
	if st.count() != n+1 {
		t.Fatal("a verb's flush did not try the store")
	}

	// Back: the pass at the end of the back-off writes what was kept.
	st.setDown(false)
	n = st.count()
	for st.count() == n {
		if err := pass(); err != nil && !errors.Is(err, ErrStoreRetryLater) {
			t.Fatalf("a pass while the back-off runs: %v; want ErrStoreRetryLater", err)
		}
		if clk.Now().Sub(failedAt) > 10*time.Minute {
			t.Fatal("no pass tried the store again within 10 minutes")
		}
	}
	if h := q.StoreHealth(); !h.UnavailableSince.IsZero() || h.Err != nil {
		t.Fatalf("after a write got through: %+v; want available", h)
	}

	// The next outage backs off from the first gap again.
	st.setDown(true)
	from = st.count()
	for range 4 {
		_ = pass()
	}
	if got, want := st.gaps(from), []int{1, 2}; !slices.Equal(got, want) {
		t.Fatalf("a second outage's flushes %v s apart; want %v", got, want)
	}
	st.setDown(false)
	if err := q.Flush(); err != nil {
		t.Fatal(err)
	}
	want, _ := q.Get(c.ID)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	q, err = openOnPath(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := q.Get(c.ID); got.State != want.State || got.State == "" {
		t.Fatalf("reopened: %s is %q; want %q as last written", c.ID, got.State, want.State)
	}
}
