// The container verbs the queue applies: hold, release, priority, kill.

package queue

import (
	"fmt"

	"dispatch-tui/engine/view"
)

// FinalError is a verb refused because its container has already ended:
// nothing was changed (the API answers 409).
type FinalError struct {
	ID    string
	State State
	Verb  string // what was refused, as the message says it: "held", "released", ...
}

func (e *FinalError) Error() string {
	return fmt.Sprintf("container %s is %s: a finished container cannot be %s", e.ID, e.State, e.Verb)
}

// ErrorKind implements view.Kinded: the container's state forbids it.
func (e *FinalError) ErrorKind() view.Kind { return view.KindConflict }

// ErrorKind implements view.Kinded: the container's state forbids it.
func (e *TransitionError) ErrorKind() view.Kind { return view.KindConflict }

// ErrorKind implements view.Kinded: a field's value is refused.
func (e *FieldError) ErrorKind() view.Kind { return view.KindInvalid }

// verb applies fn to one container under the lock, records an event, and
// writes the change durably before returning the updated container.
func (q *Queue) verb(id, actor, action, reason string, fn func(c *Container) error) (view.Container, error) {
	q.mu.Lock()
	c, ok := q.byID.lookup(id)
	if !ok {
		q.mu.Unlock()
		return view.Container{}, fmt.Errorf("container %s: %w", id, ErrNotFound)
	}
	if err := fn(c); err != nil {
		q.mu.Unlock()
		return view.Container{}, err
	}
	q.verbDoneLocked(c, actor, action, reason)
	q.notifyLocked()
	v := q.viewLocked(c)
	q.mu.Unlock()
	return v, q.Flush()
}

// verbDoneLocked notes a verb applied to c: the change for the next flush
// and the verb's event.
func (q *Queue) verbDoneLocked(c *Container, actor, action, reason string) {
	q.changedLocked(c)
	q.markDirtyLocked(c)
	q.addEventLocked(q.clock.Now().UTC(), actor, "verb", c.ID, action, reason)
}

// Hold keeps a container in the queue without starting it. A Locked
// container is unlocked by the next pass; a Running one is not touched.
func (q *Queue) Hold(id, actor, reason string) (view.Container, error) {
	return q.verb(id, actor, "hold", reason, q.holdLocked)
}

func (q *Queue) holdLocked(c *Container) error {
	if c.State.Final() {
		return &FinalError{ID: c.ID, State: c.State, Verb: "held"}
	}
	if !c.Held {
		c.Held = true
		q.markMovedLocked(c) // re-placed, so its entry (entries.go) says so
	}
	return nil
}

// Release makes a held container eligible again.
func (q *Queue) Release(id, actor, reason string) (view.Container, error) {
	return q.verb(id, actor, "release", reason, q.releaseLocked)
}

func (q *Queue) releaseLocked(c *Container) error {
	if c.State.Final() {
		return &FinalError{ID: c.ID, State: c.State, Verb: "released"}
	}
	if c.Held {
		c.Held = false
		q.markMovedLocked(c) // re-placed, so its entry (entries.go) says so
	}
	return nil
}

// SetPriority changes a container's priority; the next pass respects it.
func (q *Queue) SetPriority(id string, priority int, actor, reason string) (view.Container, error) {
	if err := checkPriority(priority); err != nil {
		return view.Container{}, err
	}
	return q.verb(id, actor, PriorityAction(priority), reason, q.priorityLocked(priority))
}

// PriorityAction is the event action of setting a priority.
func PriorityAction(priority int) string { return fmt.Sprintf("priority %d", priority) }

func checkPriority(priority int) error {
	if priority < 0 {
		return &FieldError{Field: "priority", Msg: "must not be negative"}
	}
	if priority > MaxPriority {
		return &FieldError{Field: "priority", Msg: fmt.Sprintf("must be at most %d", MaxPriority)}
	}
	return nil
}

func (q *Queue) priorityLocked(priority int) func(c *Container) error {
	return func(c *Container) error {
		if c.State.Final() {
			return &FinalError{ID: c.ID, State: c.State, Verb: "given a new priority"}
		}
		if c.Priority != priority {
			c.Priority = priority
			q.markMovedLocked(c)
		}
		return nil
	}
}

// Kill cancels a Queued or Locked container at once; a Running one is
// marked to be killed (TERM, then KILL after kill_grace) and ends Cancelled
// when its process is confirmed dead.
func (q *Queue) Kill(id, actor, reason string) (view.Container, error) {
	reason = killReason(reason)
	return q.verb(id, actor, "kill", reason, q.killLocked(actor, reason))
}

func killReason(reason string) string {
	if reason == "" {
		return "killed by operator"
	}
	return reason
}

func (q *Queue) killLocked(actor, reason string) func(c *Container) error {
	return func(c *Container) error {
		switch c.State {
		case Complete, Cancelled:
			return &FinalError{ID: c.ID, State: c.State, Verb: "killed"}
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
	}
}
