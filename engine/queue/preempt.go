// Requeueing containers of preempted instances without spending an attempt.

package queue

import "time"

// copyBool returns a copy of *b, or nil.
func copyBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

// RequeuePreempted returns a Running container whose preemptible instance
// the provider took back to the queue without spending an attempt: the
// interruption was no fault of the container's.
func (tx *Tx) RequeuePreempted(c *Container, why string) error {
	if c.State != Running {
		return &TransitionError{ID: c.ID, From: c.State, To: Queued}
	}
	if c.KillRequested {
		return tx.Cancel(c, ReasonKilled, c.KillReason)
	}
	c.Attempts--
	c.Reason, c.ReasonCode = why, ReasonPreempted
	if err := tx.move(c, Queued, why); err != nil {
		c.Attempts++
		return err
	}
	c.RunnerSeen = false
	c.InstanceID, c.InstanceType = "", ""
	c.LockedAt = time.Time{}
	return nil
}
