// The Engine's read-only surface: instances, containers, types, summary.

package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/scheduler"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// Instances returns every instance in the pool, then a row (state
// refused) for each host the driver refuses to use, then one (state
// foreign) for each instance another dispatcher owns.
func (e *Engine) Instances() []view.Instance {
	vs := append(e.pool.Instances(nil), e.pool.RefusedHosts()...)
	vs = append(vs, e.pool.ForeignInstances()...)
	out := make([]view.Instance, len(vs))
	for i := range vs {
		out[i] = instanceView(&vs[i])
	}
	return out
}

// Instance returns one instance, or another dispatcher's as its display
// row.
func (e *Engine) Instance(id string) (view.Instance, bool) {
	if v, ok := e.pool.Instance(cloud.InstanceID(id)); ok {
		return instanceView(&v), true
	}
	for _, v := range e.pool.ForeignInstances() {
		if string(v.ID) == id {
			return instanceView(&v), true
		}
	}
	return view.Instance{}, false
}

// instanceView is the one place a pool's instance view becomes what the
// engine's edge shows: the pool's own bookkeeping (what its runner
// reported, why its containers are lost) stays behind.
func instanceView(v *worker.InstanceView) view.Instance {
	out := v.Instance
	out.Containers = slices.Clone(v.Containers)
	return out
}

// Container returns one container.
func (e *Engine) Container(id string) (view.Container, bool) { return e.queue.Get(id) }

// ListOptions filter, sort and page the container list.
type ListOptions struct {
	States []queue.State // empty = all
	Query  string        // substring of id, name or command
	Sort   string        // "" (scheduling order), "priority", "-priority", "created", "-created", "name", "state"
	Offset int
	Limit  int // 0 = all
	// Labels selects containers whose labels (metadata, not placement)
	// have every one of these keys with the same value (none = no label
	// filter).
	Labels map[string]string
}

// Containers returns the containers matching opts and how many match.
func (e *Engine) Containers(opts ListOptions) ([]view.Container, int) {
	// Filter and sort small entries (the sort keys copied under the
	// queue's lock), then copy out only the requested page: a client
	// paging through 100,000 containers must not make the daemon copy all
	// of them for every page.
	n, _ := e.queue.Len()
	es := make([]listEntry, 0, n)
	m := matcherOf(opts)
	e.queue.Each(func(c *queue.Container) bool {
		if !m.match(c) {
			return true
		}
		es = append(es, listEntry{c: c, priority: c.Priority, created: c.CreatedAt, name: c.Name, state: c.State})
		return true
	})
	sortEntries(es, opts.Sort)
	total := len(es)
	if opts.Offset > 0 {
		es = es[min(opts.Offset, len(es)):]
	}
	if opts.Limit > 0 && len(es) > opts.Limit {
		es = es[:opts.Limit]
	}
	page := make([]*queue.Container, len(es))
	for i := range es {
		page[i] = es[i].c
	}
	return e.queue.Views(page), total
}

// listEntry is one container of a list being sorted: a handle to the
// record and copies of its sort keys.
type listEntry struct {
	c        *queue.Container // read only through Queue.Views
	priority int
	created  time.Time
	name     string
	state    queue.State
}

func matches(c *queue.Container, q string) bool {
	if strings.Contains(c.ID, q) || strings.Contains(c.Name, q) {
		return true
	}
	for _, a := range c.Command {
		if strings.Contains(a, q) {
			return true
		}
	}
	return false
}

func sortEntries(es []listEntry, key string) {
	desc := strings.HasPrefix(key, "-")
	key = strings.TrimPrefix(key, "-")
	var cmp func(a, b *listEntry) int
	switch key {
	case "priority":
		cmp = func(a, b *listEntry) int { return a.priority - b.priority }
	case "created":
		cmp = func(a, b *listEntry) int { return a.created.Compare(b.created) }
	case "name":
		cmp = func(a, b *listEntry) int { return strings.Compare(a.name, b.name) }
	case "state":
		cmp = func(a, b *listEntry) int { return strings.Compare(string(a.state), string(b.state)) }
	default:
		return
	}
	slices.SortStableFunc(es, func(a, b listEntry) int {
		if desc {
			return cmp(&b, &a)
		}
		return cmp(&a, &b)
	})
}

// Types returns the configured types with instance counts.
func (e *Engine) Types() []view.TypeSummary {
	out := make([]view.TypeSummary, len(e.cfg.InstanceTypes))
	idx := map[string]int{}
	for i, t := range e.cfg.InstanceTypes {
		out[i] = typeSummary(t)
		idx[t.Name] = i
	}
	for typ, byState := range e.pool.CountByType() {
		if i, ok := idx[typ]; ok {
			for st, n := range byState {
				out[i].Count += n
				out[i].ByState[st] += n
			}
		}
	}
	return out
}

// typeSummary is the one place a configured type becomes what the edge
// shows of it (with no instances counted yet).
func typeSummary(t cloud.InstanceType) view.TypeSummary {
	return view.TypeSummary{
		Name: t.Name, ProviderType: t.ProviderType, VCPUs: t.VCPUs, RAM: t.RAM, Scratch: t.Scratch, GPUs: t.GPUs,
		Price: t.Price, Preemptible: t.Preemptible, Labels: maps.Clone(t.Labels), ByState: map[view.InstanceState]int{},
	}
}

// Summary returns counts, cost, quota and the paused flag. It costs the
// number of instances, not containers: the queue keeps its counts by state.
func (e *Engine) Summary() view.Summary {
	t := e.pool.Tally()
	s := view.Summary{
		Driver:       e.cfg.Cloud.Driver,
		Store:        e.cfg.Store.Kind(),
		Instances:    t.States,
		Behaviors:    t.Behaviors,
		PricePerHour: t.PricePerHour,
		Paused:       e.queue.Paused(), ContainersGen: e.queue.Generation(),
	}
	s.Containers = e.queue.Counts()
	setStore(&s, e.queue.StoreHealth())
	s.QuotaLimit, s.AtQuota = e.pool.Quota()
	e.mu.Lock()
	s.LongestWait = e.lastStats.LongestWait
	s.LastPass = e.lastStats.Duration
	s.AtQuota = s.AtQuota || e.lastStats.AtQuota
	e.mu.Unlock()
	return s
}

// LastPass returns the statistics of the last scheduler pass.
func (e *Engine) LastPass() scheduler.Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastStats
}

// PoolStats returns the pool's counters (cloud calls, probes).
func (e *Engine) PoolStats() worker.Stats { return e.pool.Stats() }

// Events returns events after since.
func (e *Engine) Events(since uint64, limit int) ([]queue.Event, error) {
	return e.queue.Events(since, limit)
}

// ErrNoLogs is returned by Logs for a container that has not finished and
// has no output to show (not started, or its runner did not answer).
var ErrNoLogs = errors.New("no output yet")

// LogsUnavailableError is returned by Logs for a finished container whose
// output cannot be shown; Reason says why.
type LogsUnavailableError struct{ Reason string }

func (e *LogsUnavailableError) Error() string { return "output unavailable: " + e.Reason }

// Logs returns a container's output (the last tail lines when tail > 0):
// from its runner while it runs, from the store once it has finished, or
// from its runner again if the store does not have it (not stored, and
// its runner still keeps it). It is at most [containers] max_output of
// the output's end; Dropped says how much was cut before it when the lines
// asked for reach the cut (view.LogsText shows it so).
func (e *Engine) Logs(ctx context.Context, id string, tail int) (runner.Output, error) {
	c, ok := e.queue.Get(id)
	if !ok {
		return runner.Output{}, fmt.Errorf("container %s: %w", id, queue.ErrNotFound)
	}
	if c.State == queue.Running && c.InstanceID != "" {
		out, err := e.pool.Logs(ctx, cloud.InstanceID(c.InstanceID), id, tail)
		if err == nil {
			return out, nil
		}
		// It may have just exited and been forgotten: fall through.
	}
	if out, found, err := e.storedOutput(ctx, c, tail); err != nil || found {
		return out, err
	}
	if !c.State.Final() {
		return runner.Output{}, fmt.Errorf("%w: the container is %s", ErrNoLogs, c.State)
	}
	if c.StartedAt.IsZero() {
		return runner.Output{}, &LogsUnavailableError{Reason: "the container never started"}
	}
	if c.InstanceID == "" {
		return runner.Output{}, &LogsUnavailableError{Reason: orDefault(strings.TrimPrefix(c.LogsError, "logs: "), "not stored, and no instance is recorded for its last attempt")}
	}
	// Not stored (about to be, or the store failed): its runner may still
	// keep it. Asked only when it answers probes, and briefly: a reader
	// must not hang on a dead host.
	inst := cloud.InstanceID(c.InstanceID)
	v, ok := e.pool.Instance(inst)
	var runnerErr error
	var out runner.Output
	switch {
	case !ok:
		runnerErr = worker.ErrNotFound
	case v.ProbeFailing:
		runnerErr = fmt.Errorf("unreachable: %s", v.LastError)
	default:
		rctx, cancel := context.WithTimeout(ctx, runnerLogsTimeout)
		out, runnerErr = e.pool.Logs(rctx, inst, id, tail)
		cancel()
		if runnerErr == nil {
			return out, nil
		}
	}
	// The pool may have stored it and had the runner forget it between
	// the two reads.
	if out, found, err := e.storedOutput(ctx, c, tail); err != nil || found {
		return out, err
	}
	why := strings.TrimPrefix(c.LogsError, "logs: ")
	switch {
	case why != "":
	case errors.Is(runnerErr, worker.ErrNotFound):
		why = "not stored, and its instance " + c.InstanceID + " is gone: the output was never fetched"
	default:
		why = "not stored, and its instance " + c.InstanceID + " did not give it: " + runnerErr.Error()
	}
	return runner.Output{}, &LogsUnavailableError{Reason: why}
}

// storedOutput is the last tail lines of c's stored output, if stored,
// with its last run's when its runner keeps that one still (output.go).
func (e *Engine) storedOutput(ctx context.Context, c view.Container, tail int) (runner.Output, bool, error) {
	stored, found, err := e.queue.StoredOutput(c.ID)
	if err != nil || !found {
		return runner.Output{}, false, err
	}
	stored = e.withRunNotStored(ctx, c, stored)
	text := stored.Text()
	out := runner.Output{Data: runner.TailLines(text, tail)}
	if len(out.Data) == len(text) {
		out.Dropped = stored.Dropped // the lines reach the cut
	}
	return out, true, nil
}

// runnerLogsTimeout bounds the runner call Logs makes for a finished
// container whose output is not stored.
const runnerLogsTimeout = 10 * time.Second

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
