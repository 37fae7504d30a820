// The elector: one goroutine per node that takes the lease while standing
// by, renews it while leading, and stops leading the moment its own
// monotonic clock says the lease may be gone (docs/design.md §11).

package ha

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"dispatch-tui/engine/clock"
)

// Options configure an Elector.
type Options struct {
	Node    string // this node's name in the lease
	Address string // where this node's API is reached
	Lease   time.Duration
	Retry   time.Duration // how often a standby tries to take the lease
	// Clock is read for the monotonic time of each send (nil: the real
	// clock, whose readings carry the monotonic clock).
	Clock clock.Clock
	// Notify is called with each change of leadership, from the
	// elector's goroutine (or Resign's caller); it must not block. nil:
	// none.
	Notify func(Change)
	// AwayWhenLost, if set, has the node stay away from the lease from
	// each Lost on, until it calls StayAway(false): a node that must stop
	// its engine before it could lead again does not win a lease it
	// cannot use meanwhile, not even in the instant before it hears of
	// its loss.
	AwayWhenLost bool
	Log          *slog.Logger // nil: slog.Default()
}

// ChangeKind is what happened to this node's leadership.
type ChangeKind int

const (
	// Elected: this node took the lease and leads with Epoch.
	Elected ChangeKind = iota + 1
	// Lost: this node no longer leads with Epoch, for Why.
	Lost
)

// Change is one change of this node's leadership.
type Change struct {
	Kind       ChangeKind
	Epoch      int64
	ExpiredFor time.Duration // Elected: how long the lease had been expired
	Why        string        // Lost
}

// Why a leader stops leading.
const (
	LostClock    = "the lease ran out on this node's clock before a renewal succeeded"
	LostTaken    = "the lease is another node's: its epoch changed"
	LostReleased = "this node stopped and released the lease"
	LostFenced   = "a newer leader's epoch refused this node's"
)

// Elector runs the lease for one node. Step (or Run, which calls it)
// is its one writer but for Resign, which only ends a term; Token, Stats
// and Resign may be called from any goroutine.
type Elector struct {
	opts  Options
	lease Lease
	base  time.Time
	// term is what the node leads with (nil: it stands by): replaced
	// whole, so a reader never pairs one term's epoch with another's
	// renewal.
	term                        atomic.Pointer[term]
	renewals, failures, elected atomic.Uint64
	// notBefore is when, on the elector's clock, a node that stood aside
	// may try for the lease again (StandAside).
	notBefore atomic.Int64
	// away: the node cannot lead now and does not try for the lease
	// (StayAway).
	away atomic.Bool
	// expiresAt is when, on the elector's clock, the lease another node
	// held at the last try runs out (0: that try did not say): Run's next
	// try comes then.
	expiresAt atomic.Int64
}

// term is a lease held: its epoch and the send time of its last
// successful acquire or renewal, on the elector's monotonic clock.
type term struct {
	epoch  int64
	lastOK time.Duration
}

// New returns an elector for one node; it stands by until Step wins the
// lease.
func New(lease Lease, opts Options) *Elector {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Elector{opts: opts, lease: lease, base: opts.Clock.Now()}
}

// since is the elector's monotonic time.
func (e *Elector) since() time.Duration { return e.opts.Clock.Now().Sub(e.base) }

// left is how much longer t may be acted on, by the elector's clock.
func (e *Elector) left(t *term) time.Duration {
	return t.lastOK + ActFor(e.opts.Lease) - e.since()
}

// Token returns the epoch to act with, and false when this node must not
// act: it stands by, or its lease may have run out by its own clock. Read
// it before every action that only a leader may take.
func (e *Elector) Token() (int64, bool) {
	t := e.term.Load()
	if t == nil || e.left(t) <= 0 {
		return 0, false
	}
	return t.epoch, true
}

// Stats are the elector's counts, for /metrics.
type Stats struct {
	Leading         bool
	Epoch           int64 // the epoch led with; 0 while standing by
	Renewals        uint64
	RenewalFailures uint64
	Takeovers       uint64 // leases this node won
}

// Stats returns the counts so far.
func (e *Elector) Stats() Stats {
	epoch, ok := e.Token()
	return Stats{Leading: ok, Epoch: epoch, Renewals: e.renewals.Load(), RenewalFailures: e.failures.Load(), Takeovers: e.elected.Load()}
}

// Step does one round: a standby tries to take the lease, a leader gives
// it up if its time is gone by its own clock, else renews it.
func (e *Elector) Step(ctx context.Context) {
	t := e.term.Load()
	if t == nil {
		e.acquire(ctx)
		return
	}
	if e.left(t) <= 0 {
		e.lose(t, LostClock)
		return
	}
	e.renew(ctx, t)
}

func (e *Elector) acquire(ctx context.Context) {
	send := e.since()
	e.expiresAt.Store(0) // known again only from this try's answer
	if send < time.Duration(e.notBefore.Load()) || e.away.Load() {
		return
	}
	// Bounded: an acquire waiting on a lock (a write of a leader stopped
	// mid-transaction) tries again rather than waits on.
	actx, cancel := context.WithTimeout(ctx, e.opts.Lease)
	won, ok, err := e.lease.Acquire(actx, e.opts.Node, e.opts.Address, e.opts.Lease)
	cancel()
	if err != nil {
		e.opts.Log.Warn("ha: cannot reach the lease", "node", e.opts.Node, "err", err)
		return
	}
	if !ok {
		if won.Left > 0 {
			e.expiresAt.Store(int64(e.since() + won.Left))
		}
		return
	}
	e.term.Store(&term{epoch: won.Epoch, lastOK: send})
	e.elected.Add(1)
	e.opts.Log.Info("ha: leading", "node", e.opts.Node, "epoch", won.Epoch, "expired_for", won.ExpiredFor)
	e.notify(Change{Kind: Elected, Epoch: won.Epoch, ExpiredFor: won.ExpiredFor})
}

func (e *Elector) renew(ctx context.Context, t *term) {
	send := e.since()
	// A renewal answered after the lease's time on this node's clock
	// would come too late to act on: it is not waited for past that.
	rctx, cancel := context.WithTimeout(ctx, e.left(t))
	ok, err := e.lease.Renew(rctx, t.epoch, e.opts.Lease)
	cancel()
	switch {
	case err != nil:
		e.failures.Add(1)
		e.opts.Log.Warn("ha: renewal failed", "node", e.opts.Node, "epoch", t.epoch, "err", err)
		if e.left(t) <= 0 {
			e.lose(t, LostClock)
		}
	case !ok:
		e.failures.Add(1)
		e.lose(t, LostTaken)
	default:
		e.renewals.Add(1)
		// Not over a Resign made meanwhile: a term given up stays so.
		e.term.CompareAndSwap(t, &term{epoch: t.epoch, lastOK: send})
	}
}

// Resign stops leading with epoch at once, for why: the node learnt that
// another leads (its store write or a runner refused the epoch). The row
// is left alone: it is no longer this epoch's, or runs out. Nothing
// happens when the node no longer leads with epoch. Any goroutine.
func (e *Elector) Resign(epoch int64, why string) {
	if t := e.term.Load(); t != nil && t.epoch == epoch {
		e.lose(t, why)
	}
}

// StandAside stops leading with epoch, as Resign does, gives the lease row
// up so that another node takes it at its next try, and tries for it
// again no sooner than after d: the node won the lease but cannot lead
// (its engine would not open). Any goroutine.
func (e *Elector) StandAside(ctx context.Context, epoch int64, why string, d time.Duration) {
	// Before the term ends: its next acquire already waits.
	e.notBefore.Store(int64(e.since() + d))
	e.Resign(epoch, why)
	rctx, cancel := context.WithTimeout(ctx, e.opts.Lease)
	defer cancel()
	if err := e.lease.Release(rctx, epoch); err != nil {
		e.opts.Log.Warn("ha: release failed; another node takes over once the lease runs out", "node", e.opts.Node, "epoch", epoch, "err", err)
	}
}

// StayAway keeps the node from trying for the lease while away holds:
// the engine of its last term is still stopping, and no engine of a new
// term could open before it has, so a lease won meanwhile would leave the
// cluster led by a node with no engine, renewing on, until that stop
// ended. A term it leads now is not affected. Any goroutine.
func (e *Elector) StayAway(away bool) {
	e.away.Store(away)
}

// lose ends term t, once: a Resign and a Step racing tell of it once.
func (e *Elector) lose(t *term, why string) {
	if !e.term.CompareAndSwap(t, nil) {
		return
	}
	if e.opts.AwayWhenLost {
		e.away.Store(true)
	}
	e.opts.Log.Warn("ha: no longer leading", "node", e.opts.Node, "epoch", t.epoch, "why", why)
	e.notify(Change{Kind: Lost, Epoch: t.epoch, Why: why})
}

func (e *Elector) notify(c Change) {
	if e.opts.Notify != nil {
		e.opts.Notify(c)
	}
}

// Run steps until ctx ends: every Retry while standing by, every quarter
// of the lease while leading, and at the moment the lease runs out on this
// node's clock. When ctx ends it releases a lease it holds (the caller
// ends it after its last store write), so that a standby takes over at
// its next try rather than after the lease.
func (e *Elector) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			e.release()
			return
		case <-timer.C:
		}
		e.Step(ctx)
		timer.Reset(e.nextStep())
	}
}

// tryAfterExpiry is how long after the holder's lease runs out, by the
// database's reckoning carried to this node's clock, a standby tries: the
// answer that reckoning came in took some time to arrive.
const tryAfterExpiry = 10 * time.Millisecond

// nextStep is how long Run waits before its next step: while leading, a
// quarter of the lease or until it runs out on this node's clock; while
// standing by, Retry, or less when the lease seen held runs out sooner,
// so that a takeover follows the lease's end by milliseconds rather than
// by up to a Retry.
func (e *Elector) nextStep() time.Duration {
	if t := e.term.Load(); t != nil {
		return min(RenewEvery(e.opts.Lease), max(e.left(t), 0))
	}
	if at := time.Duration(e.expiresAt.Load()); at > 0 {
		return min(e.opts.Retry, max(at-e.since(), 0)+tryAfterExpiry)
	}
	return e.opts.Retry
}

// release gives up a held lease, bounded by the lease's own length.
func (e *Elector) release() {
	t := e.term.Load()
	if t == nil {
		return
	}
	e.lose(t, LostReleased) // no action takes it between here and the release
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.Lease)
	defer cancel()
	if err := e.lease.Release(ctx, t.epoch); err != nil {
		e.opts.Log.Warn("ha: release failed; a standby takes over once the lease runs out", "node", e.opts.Node, "epoch", t.epoch, "err", err)
	}
}
