// Stale locks: the start-up wait, and unlocking what no instance runs.

package scheduler

import (
	"time"

	"dispatch-tui/engine/queue"
)

// startupOver reports whether the scheduler may act on what the pool shows:
// once every instance has been probed, or stale_lock_timeout after start-up
// at the latest. Until then nothing is unlocked or requeued, so containers
// still running on instances not yet probed are re-adopted, not run twice.
func (s *Scheduler) startupOver(now time.Time) bool {
	probed := s.pool.Ready()
	over := probed || now.Sub(s.started) >= s.cfg.Dispatcher.StaleLockTimeout
	if !over {
		s.noteDue(s.started.Add(s.cfg.Dispatcher.StaleLockTimeout))
	}
	if over && !s.startupLogged {
		// The end of a restart's (or a takeover's) wait: from here on
		// containers start. Logged once, for the operator timing one.
		s.startupLogged = true
		by := "every instance listed and probed"
		if !probed {
			by = "stale_lock_timeout passed first"
		}
		s.log.Info("start-up wait over: the scheduler acts on what the pool shows", "after", now.Sub(s.started), "by", by)
	}
	return over
}

// staleUnlock releases a lock that has waited longer than
// stale_lock_timeout without an instance, so a container that cannot get
// one stops holding its place ahead of those that might.
func (s *Scheduler) staleUnlock(ps *passState, c *queue.Container) {
	if c.State != queue.Locked || c.LockedAt.IsZero() {
		return
	}
	if ps.now.Sub(c.LockedAt) <= s.cfg.Dispatcher.StaleLockTimeout {
		s.noteDue(c.LockedAt.Add(s.cfg.Dispatcher.StaleLockTimeout + 1)) // "> timeout": the first instant past it
		return
	}
	if err := ps.tx.Unlock(c); err == nil {
		ps.st.Unlocks++
	}
}
