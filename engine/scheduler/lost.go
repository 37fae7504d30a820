// A running container its runner lists as lost, with no exit of its own.

package scheduler

import (
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/worker"
)

// endedLost handles a Running container its runner lists exited with no
// exit recorded (runner.Status.Lost): its supervisor vanished with it, as
// when the host reboots. That is no exit of the program's own, so it does
// not end Complete: the attempt is lost, as on a destroyed instance, and
// the container is requeued (the attempt counts; with none left it ends
// Cancelled with the reason), whatever its restart policy. It reports
// whether r was such an end.
func (s *Scheduler) endedLost(tx *queue.Tx, c *queue.Container, v *worker.InstanceView, r *runner.Status) bool {
	if r.State != runner.StateExited || r.Lost == "" {
		return false
	}
	why := "lost on " + string(v.ID) + ": " + r.Lost
	s.log.Warn("container lost: its supervisor is gone with no exit recorded", "container", c.ID, "instance", v.ID, "why", r.Lost)
	if err := tx.Requeue(c, why); err != nil {
		s.log.Error("requeue a lost container", "container", c.ID, "err", err)
		return true
	}
	// Its output is stored and its directory forgotten as after any
	// exit, and the next attempt waits for that (the runner refuses an
	// id it still holds).
	s.forgets = append(s.forgets, forgetAction{v.ID, r.ID})
	s.blockedStart[r.ID] = struct{}{}
	return true
}
