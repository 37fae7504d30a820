// The exit step: exits that runners announced are recorded as they come,
// without waiting for the next pass (docs/design.md §6, Exit notices).

package scheduler

import (
	"errors"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/worker"
)

// RecordExits records the exits in views (worker.Pool.TakeNoticedExits:
// each noticed instance with only the statuses its notices brought) by the
// pass's own rules (reconcileReport), without the rest of a pass: no walk
// of the queue, so it may run at every notice while passes stay bounded
// in number. The freed slots are the next pass's. Write the returned
// Write as a pass's.
func (s *Scheduler) RecordExits(views []worker.InstanceView) Write {
	s.forgets = s.forgets[:0]
	s.adopted = s.adopted[:0]
	s.queue.PassUnwritten(func(tx *queue.Tx) {
		for i := range views {
			v := &views[i]
			for j := range v.Reported {
				if r := &v.Reported[j]; r.State == runner.StateExited {
					s.reconcileReport(tx, v, r, &s.carried)
				}
			}
		}
	}, nil)
	// reported and blockedStart are the pass's: it rebuilds them.
	return s.write()
}

// Write is what a pass or an exit step leaves for once the store has its
// changes: the forgets, which lose what the store does not have.
type Write struct {
	s       *Scheduler
	forgets []forgetAction
}

// write returns the Write of the pass or exit step just run, its forgets
// in a buffer a Done gave back if there is one (a pass in steady state
// allocates nothing).
func (s *Scheduler) write() Write {
	var buf []forgetAction
	select {
	case buf = <-s.spareForgets:
	default:
	}
	return Write{s: s, forgets: append(buf[:0], s.forgets...)}
}

// Done sends w's forgets once the store write that followed its pass
// returned err: only once the final states are on disk, or a runner that
// forgot a container the store still has running would get it retried
// after a restart. Unwritten, the exits are reported again by the next
// list. It only calls the pool, so it may run beside the next pass.
func (w Write) Done(err error) {
	switch {
	case errors.Is(err, queue.ErrStoreRetryLater):
		// The store's unavailable event said so once; not every pass.
		w.s.log.Debug("write queue after pass", "err", err)
	case err != nil:
		w.s.log.Error("write queue after pass", "err", err)
	default:
		for _, f := range w.forgets {
			w.s.pool.ForgetContainer(f.inst, f.containerID)
		}
	}
	if cap(w.forgets) > 0 {
		clear(w.forgets)
		select {
		case w.s.spareForgets <- w.forgets[:0]:
		default:
		}
	}
}
