// The backend of a console running the engine in its own process.

package backend

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"dispatch-tui/engine"
	"dispatch-tui/engine/api"
	"dispatch-tui/engine/view"
)

// EventsKept is how many of the most recent events a Snapshot carries.
const EventsKept = 500

// eventsPage is how many events one read asks for.
const eventsPage = 1000

// InProcess is a Backend over an *engine.Engine running in this process.
// Verbs are recorded with the actor "tui:<username>".
type InProcess struct {
	eng      *engine.Engine
	describe string
	actor    string
	events   *eventTail

	// rows are the last snapshot's: the next one's rows that show the
	// same keep their versions (Row.Ver), so that only changed ones are
	// flagged in the console.
	mu   sync.Mutex
	rows *Rows
}

var _ Backend = (*InProcess)(nil)

// NewInProcess returns a Backend for e; describe is what Describe returns
// (e.g. "local (in-process)").
func NewInProcess(e *engine.Engine, describe string) *InProcess {
	return &InProcess{
		eng: e, describe: describe, actor: Actor(),
		events: newEventTail(func(_ context.Context, since uint64, limit int) ([]view.Event, error) {
			return e.Events(since, limit)
		}),
	}
}

// Actor is the name verbs from this console are recorded under:
// "tui:<username>".
func Actor() string { return api.UserActor("tui") }

// Describe implements Backend.
func (b *InProcess) Describe() string { return b.describe }

// Snapshot implements Backend: every instance, container and type, the
// summary and the last EventsKept events.
func (b *InProcess) Snapshot(ctx context.Context) (*Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	evs, err := b.events.latest(ctx)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	cs, _ := b.eng.Containers(engine.ListOptions{})
	b.mu.Lock()
	rows := NewRows(cs, b.rows)
	b.rows = rows
	b.mu.Unlock()
	now := time.Now()
	return &Snapshot{
		TakenAt:    now,
		ListedAt:   now,
		Summary:    b.eng.Summary(),
		Instances:  b.eng.Instances(),
		Containers: cs,
		Rows:       rows,
		Types:      b.eng.Types(),
		Events:     evs,
	}, nil
}

// Changes implements Backend: the engine's notifications (after every
// scheduler pass and verb), coalesced into a channel of capacity one. The
// channel is closed when ctx ends or the engine is closed.
func (b *InProcess) Changes(ctx context.Context) <-chan struct{} {
	sub, unsub := b.eng.Subscribe()
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer unsub()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-sub:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out
}

// errNoContainer is the error for a container the engine does not know
// (dropped beyond keep_finished since the snapshot).
func errNoContainer(id string) error {
	return view.NewError(view.KindNotFound, "container "+id+" is gone (its record was dropped)")
}

// Container implements Backend.
func (b *InProcess) Container(ctx context.Context, id string) (view.Container, error) {
	if c, ok := b.eng.Container(id); ok {
		return c, nil
	}
	return view.Container{}, errNoContainer(id)
}

// Logs implements Backend.
func (b *InProcess) Logs(ctx context.Context, id string, tail int) ([]byte, error) {
	out, err := b.eng.Logs(ctx, id, tail)
	if err != nil {
		return nil, err
	}
	// As the API shows it (a remote console reads that).
	return view.LogsText(out), nil
}

// InstanceVerb implements Backend.
func (b *InProcess) InstanceVerb(ctx context.Context, id string, v view.InstanceVerb, reason string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := b.eng.ApplyInstanceVerb(id, v, b.actor, reason)
	return err
}

// ContainerVerb implements Backend.
func (b *InProcess) ContainerVerb(ctx context.Context, id string, v view.ContainerVerb, reason string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := b.eng.ApplyContainerVerb(id, v, b.actor, reason)
	return err
}

// SetPriority implements Backend.
func (b *InProcess) SetPriority(ctx context.Context, id string, priority int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := b.eng.SetPriority(id, priority, b.actor, "")
	return err
}

// SetPaused implements Backend.
func (b *InProcess) SetPaused(ctx context.Context, paused bool, reason string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if paused {
		return b.eng.Pause(b.actor, reason)
	}
	return b.eng.Resume(b.actor, reason)
}

// eventTail keeps the last EventsKept events of a dispatcher's event log
// and reads only what is new on each call. When it is far behind (a
// full page of new events, e.g. the first read of a long history) it finds
// the newest sequence number with a few one-event reads (exponential then
// binary search) instead of reading the whole log.
type eventTail struct {
	fetch func(ctx context.Context, since uint64, limit int) ([]view.Event, error)
	keep  int
	page  int

	mu   sync.Mutex
	last uint64       // the sequence number of the newest event read
	ring []view.Event // oldest first; the last keep are the ones kept
}

func newEventTail(fetch func(ctx context.Context, since uint64, limit int) ([]view.Event, error)) *eventTail {
	return &eventTail{fetch: fetch, keep: EventsKept, page: eventsPage}
}

// latest reads the new events and returns a copy of the last keep.
func (t *eventTail) latest(ctx context.Context) ([]view.Event, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// A few rounds at most: a log growing faster than we read must not
	// hold the snapshot forever.
	for range 4 {
		evs, err := t.fetch(ctx, t.last, t.page)
		if err != nil {
			return nil, err
		}
		t.add(evs)
		if len(evs) < t.page {
			break
		}
		end, err := t.newest(ctx, t.last)
		if err != nil {
			return nil, err
		}
		if end > uint64(t.keep) && end-uint64(t.keep) > t.last {
			// Skip what would not be kept anyway.
			t.ring = nil
			t.last = end - uint64(t.keep)
		}
	}
	return slices.Clone(t.ring[max(0, len(t.ring)-t.keep):]), nil
}

func (t *eventTail) add(evs []view.Event) {
	if len(evs) == 0 {
		return
	}
	t.ring = append(t.ring, evs...)
	t.last = evs[len(evs)-1].Seq
	if len(t.ring) > 2*t.keep {
		t.ring = slices.Clone(t.ring[len(t.ring)-t.keep:])
	}
}

// newest returns the newest event's sequence number, given that an event
// after lo exists.
func (t *eventTail) newest(ctx context.Context, lo uint64) (uint64, error) {
	after := func(s uint64) (bool, error) {
		evs, err := t.fetch(ctx, s, 1)
		return len(evs) > 0, err
	}
	// Invariant: an event after lo exists; none after hi.
	step := uint64(t.page)
	hi := lo + step
	for {
		ok, err := after(hi)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		lo, step = hi, step*2
		hi = lo + step
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := after(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

// Cost implements Backend.
func (b *InProcess) Cost(ctx context.Context, by string) (*view.CostReport, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if by == "" {
		by = api.DefaultCostBy
	}
	q, err := view.ParseCostBy(by)
	if err != nil {
		return nil, err
	}
	r := b.eng.Cost(q, time.Time{})
	return &r, nil
}

// ContainerCost implements Backend.
func (b *InProcess) ContainerCost(ctx context.Context, id string) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return b.eng.ContainerCosts([]string{id})[id], nil
}
