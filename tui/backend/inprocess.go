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
			p, err := e.EventsNewest(since, 0, limit)
			return p.Items, err
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
// and reads only what is new, and of that only the newest keep, in one
// read a call: a churn of verbs adds thousands of events a second, and
// reading all of them forward (then searching for the newest when far
// behind) had the daemon read and encode each one for every console.
type eventTail struct {
	// fetch reads up to limit of the newest events after since, newest
	// first.
	fetch func(ctx context.Context, since uint64, limit int) ([]view.Event, error)
	keep  int

	mu   sync.Mutex
	last uint64       // the sequence number of the newest event read
	ring []view.Event // oldest first; the last keep are the ones kept
}

func newEventTail(fetch func(ctx context.Context, since uint64, limit int) ([]view.Event, error)) *eventTail {
	return &eventTail{fetch: fetch, keep: EventsKept}
}

// latest reads the new events and returns a copy of the last keep.
func (t *eventTail) latest(ctx context.Context) ([]view.Event, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	evs, err := t.fetch(ctx, t.last, t.keep)
	if err != nil {
		return nil, err
	}
	if len(evs) >= t.keep {
		// The new ones fill what is kept (and there may be more between
		// them and the old ones): the old ones go.
		t.ring = t.ring[:0]
	}
	slices.Reverse(evs)
	t.add(evs)
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
