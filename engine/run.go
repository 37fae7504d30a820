// Run: the engine's loop, which decides when the scheduler passes run.

package engine

import (
	"context"
	"time"
)

// minPassGap bounds how often passes run (20 a second): under churn every
// change wakes the loop, and a pass walks the whole queue.
const minPassGap = 50 * time.Millisecond

// passShare bounds the share of a core the steps take when changes keep
// waking the loop: after a step that took d, the next starts no sooner
// than passShare×d after the first began (docs/design.md §5). At a million
// containers a pass takes 90–310 ms, and a churn of changes would
// otherwise keep a core in passes and the queue's lock held by them.
const passShare = 4

// stepPacer holds the loop's steps apart (minPassGap, passShare), on the
// engine's clock: tests on a fake one decide when passes run. A clock set
// back does not hold steps off.
type stepPacer struct {
	last, next time.Time // when the last step began; when the next may
}

// wait is how long a step wanted at now must wait; 0 for none.
func (p *stepPacer) wait(now time.Time) time.Duration {
	if p.last.IsZero() || now.Before(p.last) || !now.Before(p.next) {
		return 0
	}
	return p.next.Sub(now)
}

// ran notes a step that ran from start to end.
func (p *stepPacer) ran(start, end time.Time) {
	p.last, p.next = start, start.Add(minPassGap)
	if took := end.Sub(start); took > 0 {
		if t := start.Add(passShare * took); t.After(p.next) {
			p.next = t
		}
	}
}

// Run drives the engine until ctx ends: a step at once, then one on every
// change and at least every PassInterval, at most one per minPassGap on
// the engine's clock and none sooner than passShare times the last one's
// length after it began; and an exit step (recordExits) at every wake,
// which no gap holds back. The first step is not left to the first tick:
// it starts the first cloud listing, which a restart or a takeover waits
// on before anything starts (docs/design.md §10, §11).
func (e *Engine) Run(ctx context.Context) {
	qch, unsub := e.queue.Subscribe()
	defer unsub()
	tick := time.NewTicker(e.opts.PassInterval)
	defer tick.Stop()
	// The steps are written behind the loop; what is left is written
	// before Run returns.
	w := startPassWriter(e.writeSteps)
	defer w.close()
	// due fires when a wanted pass may run; nil while none waits.
	gap := time.NewTimer(time.Hour)
	gap.Stop()
	var due <-chan time.Time
	var pace stepPacer
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-qch:
			case <-e.pool.Changed():
			case <-due:
			}
		}
		e.recordExits(w)
		// A real timer only rechecks the pacer, which reads the engine's
		// clock.
		if d := pace.wait(e.clock.Now()); d > 0 {
			gap.Reset(d)
			due = gap.C
			continue
		}
		due = nil
		start := e.clock.Now()
		e.step(w)
		pace.ran(start, e.clock.Now())
	}
}

// recordExits records at once the exits runners announced since the last
// step (scheduler.RecordExits), written by w; the next pass uses their
// slots.
func (e *Engine) recordExits(w *passWriter) {
	e.stepMu.Lock()
	defer e.stepMu.Unlock()
	e.noticed = e.pool.TakeNoticedExits(e.noticed)
	if len(e.noticed) == 0 {
		return
	}
	w.add(e.sched.RecordExits(e.noticed))
	e.notify()
}
