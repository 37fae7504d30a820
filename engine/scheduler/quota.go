// No priority inversion at quota, and the cap on supervisor containers.

package scheduler

import (
	"math"
	"strconv"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
)

// No priority inversion at quota (docs/design.md §5): once a container
// waits because no instance can be created, the containers after it in the
// walk (lower priority, or equal and seen later) must not take the
// capacity it could use. An idle instance one of them would start on is
// shut down instead, so its quota goes to the waiting container, which
// creates the type it needs once the instance is gone. Each waiting
// container is owed one instance: instances already shutting down at the
// start of the pass pay those debts first, so no more are shut down than
// there are containers waiting. Busy instances with room are not affected
// (filling them frees no quota), nor are held ones (never shut down).

// quotaWaiter is a container waiting at quota with no instance being freed
// for it yet.
type quotaWaiter struct {
	c        *queue.Container
	priority int
}

// startQuotaAndSupervisors resets the pass's quota debts and supervisor
// count, and returns where the Queued part of active starts (after the
// Running prefix and the Locked part).
func (s *Scheduler) startQuotaAndSupervisors(ps *passState, active []*queue.Container, nRunning int) int {
	s.waitingAtQuota = s.waitingAtQuota[:0]
	ps.owedFrom = 0
	ps.freeing = 0
	for i := range s.views {
		if s.views[i].State == worker.StateShutdown {
			ps.freeing++
		}
	}
	ps.supervisorCap = supervisorCap(s.cfg.Dispatcher.SupervisorFraction, ps.st.QuotaLimit)
	q := nRunning
	for q < len(active) && active[q].State != queue.Queued {
		q++
	}
	ps.supervisors = 0
	if ps.supervisorCap > 0 {
		// Only Running ones are counted up front: they are never stopped
		// for the cap. Locked and Queued ones are counted as the walk
		// reaches them, in priority order, so that those past the cap
		// (it falls when a quota error lowers the limit) give up their
		// locks (atSupervisorLimit).
		for _, c := range active[:nRunning] {
			if c.State == queue.Running && c.IsSupervisor() {
				ps.supervisors++
			}
		}
		for _, c := range s.adopted {
			// Adopted this pass: Running now, walked past. One requeued
			// and adopted again in the Running prefix is counted there.
			if c.State == queue.Running && c.IsSupervisor() {
				if i := ps.tx.Index(c); i < 0 || i >= nRunning {
					ps.supervisors++
				}
			}
		}
	}
	return q
}

// supervisorCap is how many supervisors may be Locked or Running at once:
// fraction of the instance limit, at least 1; 0 = no cap (no fraction, or
// no known limit).
func supervisorCap(fraction float64, limit int) int {
	if fraction <= 0 || limit <= 0 || limit == math.MaxInt {
		return 0
	}
	return max(1, int(fraction*float64(limit)+1e-9))
}

// atSupervisorLimit reports whether c is a supervisor that may not hold a
// slot now (the cap is reached by those Running and those the walk has
// already let hold one), and if so leaves it Queued with the reason: a
// Locked one is unlocked, with no attempt spent, so the instance it was
// waiting for goes to the containers after it.
func (s *Scheduler) atSupervisorLimit(ps *passState, c *queue.Container) bool {
	if ps.supervisorCap == 0 || !c.IsSupervisor() || ps.supervisors < ps.supervisorCap {
		return false
	}
	s.unlock(ps, c)
	ps.setPending(c, queue.Pending{Code: queue.ReasonSupervisorLimit, N: ps.supervisorCap, Arg: strconv.Itoa(ps.supervisors)})
	return true
}

// countSupervisor counts supervisor c, just mapped, if the pass left it
// Locked or Running.
func (ps *passState) countSupervisor(c *queue.Container) {
	if c.State == queue.Locked || c.State == queue.Running {
		ps.supervisors++
	}
}

// noteAtQuota records c as waiting at quota: an instance already shutting
// down is counted as freed for it, else it is owed one.
func (s *Scheduler) noteAtQuota(ps *passState, c *queue.Container) {
	if ps.freeing > 0 {
		ps.freeing--
		return
	}
	// Each debt is paid by an idle instance, so no more can be paid in a
	// pass than there are instances: the rest need not be listed (at
	// 100,000 waiting this keeps the pass from writing a list as long).
	if len(s.waitingAtQuota) < len(s.slots) {
		s.waitingAtQuota = append(s.waitingAtQuota, quotaWaiter{c: c, priority: c.Priority})
	}
}

// owedTo returns the container waiting at quota ahead of c, of at least
// c's priority, that an idle instance c could start on must be freed for;
// nil if none.
func (s *Scheduler) owedTo(ps *passState, c *queue.Container) *quotaWaiter {
	if ps.owedFrom >= len(s.waitingAtQuota) {
		return nil
	}
	w := &s.waitingAtQuota[ps.owedFrom]
	if w.priority < c.Priority {
		return nil
	}
	return w
}

// freeFor withholds idle slot i from the walk and marks it to be shut down
// at the end of the pass, its quota going to w.
func (s *Scheduler) freeFor(ps *passState, i int, w *quotaWaiter) {
	sl := &s.slots[i]
	// Out of both modes' lists: not ready any more, and not waiting.
	s.leave(i)
	sl.ready = false
	sl.freeFor = w.c.ID
	ps.owedFrom++
}
