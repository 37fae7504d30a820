// Bulk verbs: one verb applied to many containers under one hold of the
// lock and written in one flush (one store transaction), so that killing
// 100,000 containers costs a few transactions, not 100,000 (docs/design.md §4).

package queue

import (
	"fmt"

	"dispatch-tui/engine/view"
)

// BulkVerb names a verb for Queue.Bulk.
type BulkVerb struct {
	Verb     view.ContainerVerb
	Priority int // for view.ContainerPriority
	Actor    string
	Reason   string
}

// BulkResult is the outcome of a bulk verb on one container.
type BulkResult struct {
	ID         string
	State      State // after the verb (unchanged when Err is set)
	Held       bool
	Priority   int
	InstanceID string
	Err        error // nil: applied
}

// Bulk applies v to each container of ids, in order, and writes every
// change in one flush. An id that is unknown, or a container the verb
// cannot apply to, gets its own error and changes nothing; the others are
// applied. The error is the flush's (the changes stay in memory and a
// later flush retries them), or an unknown verb's.
func (q *Queue) Bulk(ids []string, v BulkVerb) ([]BulkResult, error) {
	var fn func(c *Container) error
	action, reason := v.Verb.String(), v.Reason
	switch v.Verb {
	case view.ContainerHold:
		fn = q.holdLocked
	case view.ContainerRelease:
		fn = q.releaseLocked
	case view.ContainerKill:
		reason = killReason(reason)
		fn = q.killLocked(v.Actor, reason)
	case view.ContainerPriority:
		if err := checkPriority(v.Priority); err != nil {
			return nil, err
		}
		action = PriorityAction(v.Priority)
		fn = q.priorityLocked(v.Priority)
	default:
		return nil, view.UnknownContainerVerb(v.Verb.String())
	}
	out := make([]BulkResult, len(ids))
	q.mu.Lock()
	for i, id := range ids {
		out[i].ID = id
		c, ok := q.byID.lookup(id)
		if !ok {
			out[i].Err = fmt.Errorf("container %s: %w", id, ErrNotFound)
			continue
		}
		if err := fn(c); err != nil {
			out[i].Err = err
		} else {
			q.verbDoneLocked(c, v.Actor, action, reason)
		}
		out[i].State, out[i].Held, out[i].Priority, out[i].InstanceID = c.State, c.Held, c.Priority, c.InstanceID
	}
	q.notifyLocked()
	q.mu.Unlock()
	return out, q.Flush()
}
