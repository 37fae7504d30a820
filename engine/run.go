// Run: the engine's loop, which decides when the scheduler passes run.

package engine

import (
	"context"
	"time"
)

// minPassGap bounds how often passes run (20 a second): under churn every
// change wakes the loop, and a pass walks the whole queue.
const minPassGap = 50 * time.Millisecond

// Run drives the engine until ctx ends: a step at once, then one on every
// change and at least every PassInterval, at most one per minPassGap on the
// engine's clock; and an exit step (recordExits) at every wake, which no
// gap holds back. The first step is not left to the first tick: it starts
// the first cloud listing, which a restart or a takeover waits on before
// anything starts (docs/design.md §10, §11).
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
	var last time.Time
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
		// The gap is measured on the engine's clock, so that tests on a
		// fake one decide when passes run; a real timer only rechecks it.
		// A clock set back does not hold passes off.
		if since := e.clock.Now().Sub(last); !last.IsZero() && since >= 0 && since < minPassGap {
			gap.Reset(minPassGap - since)
			due = gap.C
			continue
		}
		due = nil
		last = e.clock.Now()
		e.step(w)
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
