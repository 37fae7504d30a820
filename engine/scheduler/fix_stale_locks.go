package scheduler

import (
	"time"

	"dispatch-tui/engine/queue"
)

// staleUnlock releases a lock that has waited longer than
// stale_lock_timeout without an instance.
func (s *Scheduler) staleUnlock(c *queue.Container, tx *queue.Tx, now time.Time, st *Stats) {
	if c.State == queue.Locked && !c.LockedAt.IsZero() && now.Sub(c.LockedAt) > s.cfg.Dispatcher.StaleLockTimeout {
		if err := tx.Unlock(c); err == nil {
			st.Unlocks++
		}
	}
}
