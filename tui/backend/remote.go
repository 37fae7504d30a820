// The backend of a console attached to a daemon through its API.

package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/view"
)

// DefaultRefresh is how often a Remote's Changes ticks when Refresh is 0.
const DefaultRefresh = time.Second

// Remote is a Backend over a dispatcher's management API (--connect URL).
// It keeps a copy of the containers and one of the instances that each
// Snapshot brings up to date with the changes since (rows.go,
// instances.go); Changes ticks every Refresh, for the summary and events,
// and at once when a container or an instance changes (a watch each: a
// long poll the daemon answers when one does). Verbs carry the
// actor header "tui:<username>"; the server records its socket peer or
// token.
type Remote struct {
	// Refresh is the interval of the Changes ticker (0 = DefaultRefresh).
	// Set it before calling Changes.
	Refresh time.Duration
	// watchWait is how long one watch request waits for a change
	// (DefaultWatchWait; tests shorten it).
	watchWait time.Duration

	c        *api.Client
	describe string
	events   *eventTail
	pageSize int // containers per request: the const pageSize, which tests lower

	// copy is the console's copy of the containers (rows.go), insts
	// that of the instances (instances.go).
	copy  rowCopy
	insts instCopy

	// last is the previous full snapshot; a refresh that finds the same
	// summary counts and no new event reuses its containers and types
	// instead of asking for changes, so an idle dispatcher costs three
	// small requests per refresh (the summary, the new events, the
	// instances' changes). Guarded by mu (Snapshot may run concurrently with itself
	// only in tests; the TUI keeps one in flight).
	mu   sync.Mutex
	last *Snapshot
	// retry spaces out attempts after a failed snapshot (guarded by mu).
	retry backoff
	// now is the clock of the back-off (time.Now; tests set it).
	now func() time.Time
}

var _ Backend = (*Remote)(nil)

// pageSize is how many containers (or instances) a Remote asks for a
// request, a quarter of what the API allows: decoding a page of 10,000
// took about 45 MB for a moment (the items' slice grown as it decodes,
// the decoder's buffer, a copy of the items), on top of a million rows
// the console keeps (BENCHMARKS.md). Containers are now decoded one at
// a time (api.Client.ContainerChangesEach); a first read still holds a
// page as rows.
const pageSize = api.MaxListLimit / 4

// NewRemote returns a Backend for the dispatcher c talks to; describe is
// what Describe returns (e.g. "remote http://host:9006"). c is copied: its
// Actor is set to "tui:<username>" on the copy.
func NewRemote(c *api.Client, describe string) *Remote {
	cc := *c
	cc.Actor = Actor()
	r := &Remote{c: &cc, describe: describe, pageSize: pageSize, now: time.Now, watchWait: DefaultWatchWait}
	r.events = newEventTail(func(ctx context.Context, since uint64, limit int) ([]view.Event, error) {
		p, err := cc.EventsNewest(ctx, since, 0, limit)
		return p.Items, err
	})
	return r
}

// Identity asks the dispatcher who it takes this console for and with
// which role (a viewer token cannot apply verbs).
func (r *Remote) Identity(ctx context.Context) (api.Identity, error) {
	return r.c.WhoAmI(ctx)
}

// Describe implements Backend.
func (r *Remote) Describe() string { return r.describe }

// Snapshot implements Backend. It reads the summary and events, then the
// instances, types and the containers that changed concurrently (all of
// them the first time, in pages of pageSize; Progress says how
// far that got).
//
// A failed snapshot is a *FatalError when retrying cannot help (a wrong
// token, not a dispatcher) and a *RetryError otherwise; after one, the
// next attempts wait out a doubling back-off (1s up to 30s) and return
// the RetryError at once meanwhile.
func (r *Remote) Snapshot(ctx context.Context) (*Snapshot, error) {
	r.mu.Lock()
	if err := r.retry.wait(r.now()); err != nil {
		r.mu.Unlock()
		return nil, err
	}
	r.mu.Unlock()
	s, err := r.snapshot(ctx)
	if err == nil {
		s = r.withCluster(ctx, s)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // the console is leaving: no verdict
		}
		return nil, r.retry.failed(r.now(), err)
	}
	r.retry.ok()
	return s, nil
}

func (r *Remote) snapshot(ctx context.Context) (*Snapshot, error) {
	r.mu.Lock()
	last := r.last
	r.mu.Unlock()
	// The summary and the events first, the lists after them: whatever
	// changed after the events were read shows in a later event or count,
	// so the next refresh's cheap check cannot keep lists older than the
	// events it compares with (a verb landing between the two reads used
	// to leave the console showing the state before it). The instances'
	// changes since the copy are read either way (none is a small answer).
	var sum view.Summary
	var evs []view.Event
	var insts []view.Instance
	if err := inParallel(ctx,
		func(ctx context.Context) (err error) {
			if sum, err = r.c.Summary(ctx); err != nil {
				err = fmt.Errorf("summary: %w", err)
			}
			return err
		},
		func(ctx context.Context) (err error) {
			if evs, err = r.events.latest(ctx); err != nil {
				err = fmt.Errorf("events: %w", err)
			}
			return err
		},
		func(ctx context.Context) (err error) {
			if insts, err = r.instances(ctx); err != nil {
				err = fmt.Errorf("instances: %w", err)
			}
			return err
		}); err != nil {
		return nil, err
	}
	if last != nil && sameCounts(sum, last.Summary) && lastSeq(evs) == lastSeq(last.Events) {
		// Nothing new in the event log and the same counts: the big
		// lists cannot have changed.
		s := *last
		s.Summary, s.Events, s.Instances, s.TakenAt = sum, evs, insts, time.Now()
		s.ListedAt = s.TakenAt // nothing changed: the list is current
		return &s, nil
	}
	s, err := r.lists(ctx, sum, evs, insts)
	if err == nil {
		r.mu.Lock()
		r.last = s
		r.mu.Unlock()
	}
	return s, err
}

func lastSeq(evs []view.Event) uint64 {
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}

// sameCounts compares the parts of two summaries that change whenever an
// instance or a container does (not the pass time or the longest wait);
// ContainersGen covers what counts do not, such as a pending reason.
func sameCounts(a, b view.Summary) bool {
	return maps.Equal(a.Instances, b.Instances) && maps.Equal(a.Containers, b.Containers) &&
		maps.Equal(a.Behaviors, b.Behaviors) && a.Paused == b.Paused && a.AtQuota == b.AtQuota &&
		a.QuotaLimit == b.QuotaLimit && a.PricePerHour == b.PricePerHour && a.ContainersGen == b.ContainersGen
}

// lists reads the types and the containers that changed, at once, for a
// snapshot of sum, evs and insts (read before them).
func (r *Remote) lists(ctx context.Context, sum view.Summary, evs []view.Event, insts []view.Instance) (*Snapshot, error) {
	s := &Snapshot{Summary: sum, Events: evs, Instances: insts}
	err := inParallel(ctx,
		func(ctx context.Context) (err error) {
			if s.Types, err = r.c.Types(ctx); err != nil {
				err = fmt.Errorf("types: %w", err)
			}
			return err
		},
		func(ctx context.Context) (err error) {
			if s.Rows, err = r.containers(ctx); err != nil {
				err = fmt.Errorf("containers: %w", err)
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	if s.Instances == nil {
		s.Instances = []view.Instance{}
	}
	if s.Types == nil {
		s.Types = []view.TypeSummary{}
	}
	s.TakenAt = time.Now()
	s.ListedAt = s.TakenAt
	return s, nil
}

// inParallel runs fs at once and returns the first failure's error (one fails:
// the others are cancelled).
func inParallel(ctx context.Context, fs ...func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, f := range fs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return firstCause(errs)
	}
	return nil
}

// firstCause prefers an error that is not a cancellation caused by another
// request's failure.
func firstCause(errs []error) error {
	for _, err := range errs {
		if !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return errs[0]
}

// Changes implements Backend: a tick every Refresh and one as soon as a
// container or an instance changes (the watches), coalesced (a tick the
// reader has not taken yet is not doubled); closed when ctx ends.
func (r *Remote) Changes(ctx context.Context) <-chan struct{} {
	d := r.Refresh
	if d <= 0 {
		d = DefaultRefresh
	}
	out := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		r.watch(ctx, out, r.containersWatched())
	}()
	go func() {
		defer wg.Done()
		r.watch(ctx, out, r.instancesWatched())
	}()
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	go func() {
		wg.Wait()
		close(out)
	}()
	return out
}

// Container implements Backend: one GET of the record by id.
func (r *Remote) Container(ctx context.Context, id string) (view.Container, error) {
	return r.c.Container(ctx, id)
}

// Logs implements Backend.
func (r *Remote) Logs(ctx context.Context, id string, tail int) ([]byte, error) {
	var buf bytes.Buffer
	if err := r.c.Logs(ctx, id, tail, false, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// InstanceVerb implements Backend.
func (r *Remote) InstanceVerb(ctx context.Context, id string, v view.InstanceVerb, reason string) error {
	_, err := r.c.InstanceVerb(ctx, id, v, reason)
	return err
}

// ContainerVerb implements Backend.
func (r *Remote) ContainerVerb(ctx context.Context, id string, v view.ContainerVerb, reason string) error {
	_, err := r.c.ContainerVerb(ctx, id, v, reason)
	return err
}

// SetPriority implements Backend.
func (r *Remote) SetPriority(ctx context.Context, id string, priority int) error {
	_, err := r.c.SetPriority(ctx, id, priority)
	return err
}

// SetPaused implements Backend.
func (r *Remote) SetPaused(ctx context.Context, paused bool, reason string) error {
	if paused {
		return r.c.Pause(ctx, reason)
	}
	return r.c.Resume(ctx, reason)
}

// Cost implements Backend.
func (r *Remote) Cost(ctx context.Context, by string) (*view.CostReport, error) {
	rep, err := r.c.Cost(ctx, by, 0)
	if err != nil {
		return nil, err
	}
	return &rep, nil
}

// ContainerCost implements Backend.
func (r *Remote) ContainerCost(ctx context.Context, id string) (float64, error) {
	return r.c.ContainerCost(ctx, id)
}
