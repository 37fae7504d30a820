// Bulk container verbs: one verb applied to a list of ids or to the
// containers a list filter selects, in one store transaction per batch
// (docs/design.md §4, "Bulk verbs").

package engine

import (
	"dispatch-tui/cloud"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// BulkBatch is how many containers one store transaction of a bulk verb
// changes: large enough that 100,000 kills are 20 commits, small enough
// that the queue's lock is not held for long at a time.
const BulkBatch = 5000

// BulkRequest is a container verb for many containers: the ids in IDs, or
// (when Filter is set) the containers its states, labels and query match,
// from submission sequence From on, at most Limit of them.
type BulkRequest struct {
	Verb view.ContainerVerb // hold, release, kill, or priority with Priority set
	// Priority is the value of ContainerPriority (and only of it).
	Priority *int
	IDs      []string
	Filter   *ListOptions // its Sort, Offset and Limit do not apply
	From     uint64
	Limit    int // with Filter: at most this many (0 = BulkBatch)
	Actor    string
	Reason   string
}

// BulkOutcome is what a bulk verb did to each container, in the order of
// the ids (or of submission, for a filter). With a filter, More says more
// containers may match from Next on.
type BulkOutcome struct {
	Results []queue.BulkResult
	Next    uint64
	More    bool
}

// ErrEmptySelector refuses a bulk verb that names no ids and a filter that
// matches everything: "all containers" must be said (e.g. every state).
var ErrEmptySelector = view.NewError(view.KindInvalid, "the selector is empty and would select every container: give ids, labels, states or a query")

// Bulk applies a verb to many containers, BulkBatch of them per store
// transaction. A container the verb cannot apply to (unknown, already
// final) gets its own error in the outcome and the others are applied;
// the error is about the request (an unknown verb, an empty selector) or
// the store.
func (e *Engine) Bulk(req BulkRequest) (BulkOutcome, error) {
	v := queue.BulkVerb{Verb: req.Verb, Actor: req.Actor, Reason: req.Reason}
	switch {
	case req.Verb.TakesValue() && req.Priority != nil:
		v.Priority = *req.Priority
	case req.Verb.TakesValue():
		return BulkOutcome{}, &queue.FieldError{Field: "priority", Msg: "required with verb " + req.Verb.String()}
	case req.Priority != nil:
		return BulkOutcome{}, &queue.FieldError{Field: "priority", Msg: "only with verb " + view.ContainerPriority.String()}
	}
	var out BulkOutcome
	ids := req.IDs
	if req.Filter != nil {
		f := *req.Filter
		if len(f.States) == 0 && len(f.Labels) == 0 && f.Query == "" {
			return BulkOutcome{}, ErrEmptySelector
		}
		ids, out.Next, out.More = e.selectIDs(f, req.From, req.Limit)
	}
	out.Results = make([]queue.BulkResult, 0, len(ids))
	var err error
	for len(ids) > 0 && err == nil {
		n := min(len(ids), BulkBatch)
		var rs []queue.BulkResult
		rs, err = e.queue.Bulk(ids[:n], v)
		out.Results = append(out.Results, rs...)
		ids = ids[n:]
		if v.Verb == view.ContainerKill {
			e.killRunning(rs)
		}
		e.notify()
	}
	return out, err
}

// killRunning sends the kill of each running container a bulk kill marked.
func (e *Engine) killRunning(rs []queue.BulkResult) {
	for _, r := range rs {
		if r.Err == nil && r.State == queue.Running && r.InstanceID != "" {
			e.pool.KillContainer(cloud.InstanceID(r.InstanceID), r.ID)
		}
	}
}

// selectIDs returns the ids of up to limit (0 = BulkBatch) containers f
// matches from submission sequence from on, in submission order, and
// where the next page starts if more may match.
//
// The walk takes the queue's lock for selectChunk containers at a time,
// not for the whole walk: 5,000 matches of a 1 % selector are half a
// million containers walked, and a submit, a pass or a watcher's read
// waited behind all of it (BENCHMARKS.md, helper churn). Between chunks
// containers may be submitted or dropped; the walk goes on from the
// sequence after the last one it saw, as a page's continue does.
func (e *Engine) selectIDs(f ListOptions, from uint64, limit int) (ids []string, next uint64, more bool) {
	if limit <= 0 {
		limit = BulkBatch
	}
	m := matcherOf(f)
	// With a label, only the containers that have it are walked
	// (queue.EachLabelled), unless that label is not indexed.
	each := e.queue.EachFrom
	if len(m.labels) > 0 {
		l := m.labels[0]
		each = func(from uint64, fn func(c *queue.Container) bool) {
			if !e.queue.EachLabelled(l.key, l.value, from, fn) {
				e.queue.EachFrom(from, fn)
			}
		}
	}
	for walked := selectChunk; walked == selectChunk && !more; {
		walked = 0
		each(from, func(c *queue.Container) bool {
			if walked == selectChunk {
				return false
			}
			walked++
			from = c.Seq + 1
			if !m.match(c) {
				return true
			}
			if len(ids) == limit {
				more = true
				return false
			}
			ids = append(ids, c.ID)
			next = c.Seq + 1
			return true
		})
	}
	return ids, next, more
}

// selectChunk is how many containers selectIDs walks under one hold of
// the queue's lock: about a millisecond's walk.
const selectChunk = 8192
