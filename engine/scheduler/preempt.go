// Requeueing the containers of instances the provider took back.

package scheduler

import (
	"dispatch-tui/cloud"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
)

// preemptedPool is the optional part of the Pool that remembers instances
// the provider took back after they left the pool (worker.Pool does).
type preemptedPool interface {
	PreemptedInstance(id cloud.InstanceID) string
}

// requeueIfPreempted requeues c, Running on an instance the provider took
// back (a spot interruption), without spending an attempt, and reports
// whether it did. v is c's instance, nil when it has left the pool.
func (s *Scheduler) requeueIfPreempted(tx *queue.Tx, c *queue.Container, v *worker.InstanceView, st *Stats) bool {
	var why string
	switch {
	case v != nil && v.Preempted:
		why = v.ContainersLost
	case v == nil:
		if pp, ok := s.pool.(preemptedPool); ok {
			why = pp.PreemptedInstance(cloud.InstanceID(c.InstanceID))
		}
	}
	if why == "" {
		return false
	}
	if err := tx.RequeuePreempted(c, why); err != nil {
		s.log.Error("requeue after a spot interruption", "container", c.ID, "err", err)
		return true
	}
	st.Preempted++
	return true
}
