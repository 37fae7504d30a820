// Noting what a runner reports of a container's health check.

package scheduler

import (
	"strconv"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/worker"
)

// noteHealth keeps what a runner reports of a container's health check on
// its record (in memory; a change of state is an event).
func (s *Scheduler) noteHealth(tx *queue.Tx, c *queue.Container, r *runner.Status) {
	if r.Health != nil {
		tx.SetHealth(c, r.Health)
	}
}

// endedUnhealthy handles a Running container its runner killed for failing
// its health check: a failure, retried under on-failure while attempts
// remain, else Cancelled UNHEALTHY. It reports whether r was such an end.
func (s *Scheduler) endedUnhealthy(tx *queue.Tx, c *queue.Container, v *worker.InstanceView, r *runner.Status, st *Stats) bool {
	if r.EndReason() != runner.EndUnhealthy {
		return false
	}
	why := "unhealthy"
	if h := r.Health; h != nil {
		why += ": health check failed " + strconv.Itoa(h.Failures) + " times in a row"
		if h.LastResult != "" {
			why += " (last: " + h.LastResult + ")"
		}
	}
	s.log.Info("container killed by its runner: unhealthy", "container", c.ID, "instance", v.ID, "exit_code", r.ExitCode)
	if err := tx.FinishUnhealthy(c, r.ExitCode, r.FinishedAt, why); err != nil {
		s.log.Error("finish unhealthy container", "container", c.ID, "err", err)
		return true
	}
	st.Unhealthy++
	s.forgets = append(s.forgets, forgetAction{v.ID, r.ID})
	// A retry waits until the exited attempt is forgotten, as after Finish.
	s.blockedStart[r.ID] = struct{}{}
	return true
}
