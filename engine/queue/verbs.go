package queue

import "fmt"

// verb applies fn to one container under the lock, records an event, and
// writes the change durably before returning the updated container.
func (q *Queue) verb(id, actor, action, reason string, fn func(c *Container) error) (Container, error) {
	q.mu.Lock()
	c, ok := q.byID[id]
	if !ok {
		q.mu.Unlock()
		return Container{}, fmt.Errorf("container %s: %w", id, ErrNotFound)
	}
	if err := fn(c); err != nil {
		q.mu.Unlock()
		return Container{}, err
	}
	now := q.clock.Now().UTC()
	q.gen++
	q.markDirtyLocked(c)
	q.addEventLocked(now, actor, "verb", c.ID, action, reason)
	q.notifyLocked()
	v := q.viewLocked(c)
	q.mu.Unlock()
	return v, q.Flush()
}

// Hold keeps a container in the queue without starting it. A Locked
// container is unlocked by the next pass; a Running one is not touched.
func (q *Queue) Hold(id, actor, reason string) (Container, error) {
	return q.verb(id, actor, "hold", reason, func(c *Container) error {
		if c.State.Final() {
			return fmt.Errorf("container %s is %s: only queued containers can be held", id, c.State)
		}
		if !c.Held {
			c.Held = true
			q.markMovedLocked(c) // re-placed, so its entry (entries.go) says so
		}
		return nil
	})
}

// Release makes a held container eligible again.
func (q *Queue) Release(id, actor, reason string) (Container, error) {
	return q.verb(id, actor, "release", reason, func(c *Container) error {
		if c.State.Final() {
			return fmt.Errorf("container %s is %s: nothing to release", id, c.State)
		}
		if c.Held {
			c.Held = false
			q.markMovedLocked(c) // re-placed, so its entry (entries.go) says so
		}
		return nil
	})
}

// SetPriority changes a container's priority; the next pass respects it.
func (q *Queue) SetPriority(id string, priority int, actor, reason string) (Container, error) {
	if priority < 0 {
		return Container{}, &FieldError{Field: "priority", Msg: "must not be negative"}
	}
	return q.verb(id, actor, fmt.Sprintf("priority %d", priority), reason, func(c *Container) error {
		if c.State.Final() {
			return fmt.Errorf("container %s is %s: its priority cannot change", id, c.State)
		}
		if c.Priority != priority {
			c.Priority = priority
			q.markMovedLocked(c)
		}
		return nil
	})
}

// Kill cancels a Queued or Locked container at once; a Running one is
// marked to be killed (TERM, then KILL after kill_grace) and ends Cancelled
// when its process is confirmed dead.
func (q *Queue) Kill(id, actor, reason string) (Container, error) {
	if reason == "" {
		reason = "killed by operator"
	}
	return q.verb(id, actor, "kill", reason, func(c *Container) error {
		switch c.State {
		case Complete, Cancelled:
			return fmt.Errorf("container %s is already %s", id, c.State)
		case Running:
			c.KillRequested = true
			c.KillReason = reason
			return nil
		}
		c.Reason, c.ReasonCode = reason, ReasonKilled
		c.FinishedAt = q.clock.Now().UTC()
		c.ord.stale = true
		q.setStateLocked(c, Cancelled)
		q.addEventLocked(c.FinishedAt, actor, "state", c.ID, string(Cancelled), reason)
		return nil
	})
}
