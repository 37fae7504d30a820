package ha_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/ha"
	"dispatch-tui/engine/store/pgstore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

// node is one contender: its own store connection, elector and record of
// the changes it was told of.
type node struct {
	store   *pgstore.Store
	el      *ha.Elector
	clk     *clock.Fake // nil: the real clock
	mu      sync.Mutex
	changes []ha.Change
}

func newNode(t *testing.T, url, name string, lease time.Duration, clk *clock.Fake) *node {
	t.Helper()
	s, err := pgstore.Open(pgstore.Options{URL: url, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	n := &node{store: s, clk: clk}
	opts := ha.Options{Node: name, Address: "https://" + name + ":7070", Lease: lease, Retry: 50 * time.Millisecond,
		Notify: func(c ha.Change) { n.mu.Lock(); n.changes = append(n.changes, c); n.mu.Unlock() }}
	if clk != nil {
		opts.Clock = clk
	}
	n.el = ha.New(s, opts)
	return n
}

func (n *node) seen() []ha.Change {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]ha.Change(nil), n.changes...)
}

func (n *node) holder(t *testing.T) ha.Holder {
	t.Helper()
	h, err := n.store.Holder(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestTwoContenders: two nodes trying at the same instant: one wins, at
// epoch 1, the lease row naming it; the other stands by while the winner
// renews, and takes over with a higher epoch once the winner stops
// renewing, its lease expired in the database's time. The deposed
// winner's next renewal finds the epoch changed and it stops leading.
func TestTwoContenders(t *testing.T) {
	url := pgtest.NewDatabase(t)
	const lease = ha.MinLease
	a, b := newNode(t, url, "a", lease, clock.NewFake(time.Unix(0, 0))), newNode(t, url, "b", lease, clock.NewFake(time.Unix(0, 0)))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, n := range []*node{a, b} {
		wg.Go(func() { <-start; n.el.Step(context.Background()) })
	}
	close(start)
	wg.Wait()
	ea, okA := a.el.Token()
	eb, okB := b.el.Token()
	if okA == okB || max(ea, eb) != 1 {
		t.Fatalf("after one try each: a leads %v (epoch %d), b leads %v (epoch %d); want exactly one at epoch 1", okA, ea, okB, eb)
	}
	// a is the winner from here on, b the other.
	aName := "a"
	if !okA {
		a, b, aName = b, a, "b"
	}
	if h := a.holder(t); h.Node != aName || h.Epoch != 1 || !h.Valid || h.Address != "https://"+aName+":7070" {
		t.Fatalf("lease row %+v; want %s's, epoch 1, valid", h, aName)
	}
	// While a renews, b cannot take the lease.
	for range 3 {
		a.el.Step(context.Background())
		b.el.Step(context.Background())
		if _, ok := b.el.Token(); ok {
			t.Fatalf("b took the lease while a renewed it; lease row %+v", b.holder(t))
		}
	}
	// a stops renewing (its clock stands still: it still thinks it may
	// act); b takes over once the lease has expired in the database.
	wait.With{Step: func() { b.el.Step(context.Background()) }, Seen: func() string { return fmt.Sprintf("lease row %+v", b.holder(t)) }}.
		Until(t, "the other node to take over", 3*lease, func() bool { _, ok := b.el.Token(); return ok })
	if e, _ := b.el.Token(); e != 2 {
		t.Fatalf("b leads with epoch %d, want 2", e)
	}
	got := b.seen()
	if len(got) != 1 || got[0].Kind != ha.Elected || got[0].Epoch != 2 || got[0].ExpiredFor < 0 {
		t.Fatalf("b was told %+v; want one Elected at epoch 2, the lease expired for >= 0", got)
	}
	if e, ok := a.el.Token(); !ok || e != 1 {
		t.Fatalf("a, its clock held, should still believe it leads with 1 until it renews; Token = %d, %v", e, ok)
	}
	a.el.Step(context.Background())
	if _, ok := a.el.Token(); ok {
		t.Fatal("a still leads after a renewal that found epoch 2")
	}
	if got := a.seen(); len(got) != 2 || got[1].Kind != ha.Lost || got[1].Why != ha.LostTaken || got[1].Epoch != 1 {
		t.Fatalf("a was told %+v; want Elected 1 then Lost 1 (%q)", got, ha.LostTaken)
	}
	if st := a.el.Stats(); st.Leading || st.Takeovers != 1 || st.Renewals != 3 || st.RenewalFailures != 1 {
		t.Fatalf("a's stats %+v; want not leading, 1 takeover, 3 renewals, 1 failure", st)
	}
}

// TestPausedLeaderFencesItself: a leader that stops renewing (paused: its
// steps stop while its clock goes on) stops acting on its own clock, with
// ha.Margin to spare, before the database would hand the lease to anyone:
// at that moment the standby still cannot take it. Once it does, with a
// higher epoch, the woken leader finds it gone.
func TestPausedLeaderFencesItself(t *testing.T) {
	url := pgtest.NewDatabase(t)
	const lease = 3 * time.Second
	clk := clock.NewFake(time.Unix(0, 0))
	a, b := newNode(t, url, "a", lease, clk), newNode(t, url, "b", lease, nil)
	a.el.Step(context.Background())
	if e, ok := a.el.Token(); !ok || e != 1 {
		t.Fatalf("a's first try: Token = %d, %v; want epoch 1", e, ok)
	}
	// Paused just short of its time, it may still act.
	clk.Advance(ha.ActFor(lease) - time.Millisecond)
	if _, ok := a.el.Token(); !ok {
		t.Fatal("a stopped acting before its time on its clock")
	}
	clk.Advance(time.Millisecond)
	if e, ok := a.el.Token(); ok {
		t.Fatalf("a may still act with epoch %d after %s without a renewal on its clock", e, ha.ActFor(lease))
	}
	// The database has not given the lease up yet: no one else can act.
	b.el.Step(context.Background())
	if _, ok := b.el.Token(); ok {
		t.Fatalf("b took the lease while a may have acted (a fences %s early); lease row %+v", ha.Margin, b.holder(t))
	}
	// a wakes: it says it lost the lease, and does not renew it.
	a.el.Step(context.Background())
	if got := a.seen(); len(got) != 2 || got[1].Kind != ha.Lost || got[1].Why != ha.LostClock {
		t.Fatalf("a was told %+v; want Elected then Lost (%q)", got, ha.LostClock)
	}
	wait.With{Step: func() { b.el.Step(context.Background()) }, Seen: func() string { return fmt.Sprintf("lease row %+v", b.holder(t)) }}.
		Until(t, "b to take over", 2*lease, func() bool { _, ok := b.el.Token(); return ok })
	if e, _ := b.el.Token(); e != 2 {
		t.Fatalf("b leads with epoch %d, want 2", e)
	}
	a.el.Step(context.Background()) // a standby again: b's lease is running
	if _, ok := a.el.Token(); ok {
		t.Fatalf("a took the lease back from b; lease row %+v", a.holder(t))
	}
}

// TestRunRenewsAndReleases: Run keeps the lease through renewals on the
// real clock and, when stopped, releases it: a standby takes it at once,
// long before the lease would have run out.
func TestRunRenewsAndReleases(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a, b := newNode(t, url, "a", ha.MinLease, nil), newNode(t, url, "b", ha.MinLease, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.el.Run(ctx); close(done) }()
	wait.With{Seen: func() string { return fmt.Sprintf("%+v", a.el.Stats()) }}.
		Until(t, "a to lead through three renewals", 5*ha.MinLease, func() bool { st := a.el.Stats(); return st.Leading && st.Renewals >= 3 })
	if st := a.el.Stats(); st.Epoch != 1 || st.Takeovers != 1 {
		t.Fatalf("a's stats %+v; want epoch 1 throughout, 1 takeover", st)
	}
	// Renewed every quarter of its length, a's lease would run on for
	// most of it after Run returns, were it not released.
	cancel()
	<-done
	if _, ok := a.el.Token(); ok {
		t.Fatal("a still acts after Run returned")
	}
	if h := b.holder(t); h.Valid {
		t.Fatalf("lease row after a's Run returned: %+v; want released (expired)", h)
	}
	b.el.Step(context.Background())
	if e, ok := b.el.Token(); !ok || e != 2 {
		t.Fatalf("b's first try after the release: Token = %d, %v; want epoch 2", e, ok)
	}
}

// TestResign: a leader told by a refused write that another node leads
// stops at once, says so once, and is a standby again: its next step
// tries to take the lease like any other, with a new epoch.
func TestResign(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a := newNode(t, url, "a", ha.MinLease, clock.NewFake(time.Unix(0, 0)))
	a.el.Step(context.Background())
	if e, ok := a.el.Token(); !ok || e != 1 {
		t.Fatalf("a's first try: Token = %d, %v; want epoch 1", e, ok)
	}
	a.el.Resign(2, ha.LostFenced) // not its epoch: nothing
	if _, ok := a.el.Token(); !ok {
		t.Fatal("a stopped leading on a Resign of another epoch")
	}
	a.el.Resign(1, ha.LostFenced)
	a.el.Resign(1, ha.LostFenced)
	if e, ok := a.el.Token(); ok {
		t.Fatalf("a still acts with epoch %d after resigning", e)
	}
	if got := a.seen(); len(got) != 2 || got[1].Kind != ha.Lost || got[1].Why != ha.LostFenced || got[1].Epoch != 1 {
		t.Fatalf("a was told %+v; want Elected 1 then one Lost 1 (%q)", got, ha.LostFenced)
	}
	a.el.Step(context.Background())
	if e, ok := a.el.Token(); !ok || e != 2 {
		t.Fatalf("a's try after resigning: Token = %d, %v; want its own lease again at epoch 2", e, ok)
	}
}

// TestStandAside: a node that won the lease but cannot lead gives it up:
// the row is released at once, so another node takes it at its next try;
// the node itself does not try again until its wait is over on its clock.
func TestStandAside(t *testing.T) {
	url := pgtest.NewDatabase(t)
	clk := clock.NewFake(time.Unix(0, 0))
	a, b := newNode(t, url, "a", ha.MinLease, clk), newNode(t, url, "b", ha.MinLease, nil)
	a.el.Step(context.Background())
	if e, ok := a.el.Token(); !ok || e != 1 {
		t.Fatalf("a's first try: Token = %d, %v; want epoch 1", e, ok)
	}
	const wait = 10 * time.Second
	a.el.StandAside(context.Background(), 1, "its engine would not open", wait)
	if e, ok := a.el.Token(); ok {
		t.Fatalf("a still acts with epoch %d after standing aside", e)
	}
	if h := a.holder(t); h.Valid {
		t.Fatalf("lease row after a stood aside: %+v; want released (expired)", h)
	}
	clk.Advance(wait - time.Millisecond)
	a.el.Step(context.Background())
	if e, ok := a.el.Token(); ok {
		t.Fatalf("a took the lease back (epoch %d) before its wait was over; lease row %+v", e, a.holder(t))
	}
	b.el.Step(context.Background())
	if e, ok := b.el.Token(); !ok || e != 2 {
		t.Fatalf("b's first try after a stood aside: Token = %d, %v; want epoch 2; lease row %+v", e, ok, b.holder(t))
	}
	// b gives it up in turn; a, its wait over, tries again.
	b.el.StandAside(context.Background(), 2, "its engine would not open", wait)
	clk.Advance(time.Millisecond)
	a.el.Step(context.Background())
	if e, ok := a.el.Token(); !ok || e != 3 {
		t.Fatalf("a's try once its wait was over: Token = %d, %v; want epoch 3", e, ok)
	}
}

// TestStayAway: a node whose last term's engine is still stopping does
// not take a free lease, however long it stays away, and takes it at its
// first try once back; a term it leads is not ended by staying away.
func TestStayAway(t *testing.T) {
	url := pgtest.NewDatabase(t)
	clk := clock.NewFake(time.Unix(0, 0))
	a := newNode(t, url, "a", ha.MinLease, clk)
	a.el.StayAway(true)
	for range 3 {
		a.el.Step(context.Background())
		clk.Advance(ha.MinLease)
	}
	if e, ok := a.el.Token(); ok {
		t.Fatalf("a took the lease (epoch %d) while away; lease row %+v", e, a.holder(t))
	}
	if h := a.holder(t); h.Valid {
		t.Fatalf("lease row while the only node stayed away: %+v; want free", h)
	}
	a.el.StayAway(false)
	a.el.Step(context.Background())
	if e, ok := a.el.Token(); !ok || e != 1 {
		t.Fatalf("a's first try once back: Token = %d, %v; want epoch 1", e, ok)
	}
	a.el.StayAway(true)
	a.el.Step(context.Background())
	if e, ok := a.el.Token(); !ok || e != 1 {
		t.Fatalf("a leading when told to stay away: Token = %d, %v; want still epoch 1 (only tries are held)", e, ok)
	}
}

// TestAwayWhenLost: an elector told to stay away after each loss does
// not take the lease back, though the row is still its own, until the
// node says it can lead again (its lost term's engine stopped); one not
// told so takes it back at its next try.
func TestAwayWhenLost(t *testing.T) {
	url := pgtest.NewDatabase(t)
	for _, away := range []bool{false, true} {
		clk := clock.NewFake(time.Unix(0, 0))
		s, err := pgstore.Open(pgstore.Options{URL: url, Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		var lost []ha.Change
		var mu sync.Mutex
		el := ha.New(s, ha.Options{Node: "a", Address: "https://a:7070", Lease: ha.MinLease, Retry: 50 * time.Millisecond, Clock: clk, AwayWhenLost: away,
			Notify: func(c ha.Change) {
				if c.Kind == ha.Lost {
					mu.Lock()
					lost = append(lost, c)
					mu.Unlock()
				}
			}})
		el.Step(context.Background())
		first, ok := el.Token()
		if !ok {
			t.Fatalf("away=%v: a did not take the free lease", away)
		}
		// Its own clock runs past the lease: it stops leading, though the
		// row, in the database's time, is still its own.
		clk.Advance(ha.MinLease + time.Millisecond)
		el.Step(context.Background())
		mu.Lock()
		n := len(lost)
		mu.Unlock()
		if _, ok := el.Token(); ok || n != 1 {
			t.Fatalf("away=%v: past its lease on its own clock: leading %v, %d Lost; want not leading, one Lost", away, ok, n)
		}
		el.Step(context.Background())
		e, ok := el.Token()
		switch {
		case !away && (!ok || e != first+1):
			t.Fatalf("away=false: the next try: Token = %d, %v; want epoch %d", e, ok, first+1)
		case away && ok:
			t.Fatalf("away=true: took the lease back (epoch %d) before the node said it could lead", e)
		}
		if away {
			el.StayAway(false)
			el.Step(context.Background())
			if e, ok := el.Token(); !ok || e != first+1 {
				t.Fatalf("away=true: the try once the node could lead: Token = %d, %v; want epoch %d", e, ok, first+1)
			}
		}
		el.Resign(first+1, "test over")
		if err := s.Release(context.Background(), first+1); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenBackoff: the wait after each failure to open in a row doubles
// from twice the retry, up to OpenBackoffMax.
func TestOpenBackoff(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= 8; n++ {
		got = append(got, ha.OpenBackoff(time.Second, n))
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, ha.OpenBackoffMax, ha.OpenBackoffMax, ha.OpenBackoffMax}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("OpenBackoff(1s, 1…8) = %v; want %v", got, want)
	}
	if d := ha.OpenBackoff(time.Second, 1000); d != ha.OpenBackoffMax {
		t.Fatalf("OpenBackoff(1s, 1000) = %v; want %v", d, ha.OpenBackoffMax)
	}
}
