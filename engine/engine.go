// Package engine wires the container queue, the worker pool, the scheduler
// and a cloud driver into one Engine: the single surface (snapshot,
// subscribe, verbs) that the API server and the TUI use.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/scheduler"
	"dispatch-tui/engine/worker"
)

// Options configure an Engine.
type Options struct {
	Config       *config.Config
	InstanceSet  cloud.InstanceSet
	NewExecutor  func(cloud.Instance) (runner.Executor, error)
	Clock        clock.Clock  // nil = real clock
	Logger       *slog.Logger // nil = discard
	RunnerHash   string
	RunnerBinary func() ([]byte, error)
	// Owner tags the instances this dispatcher manages; default "dispatch-tui".
	Owner string
	// PassInterval is the longest time between passes; default 1s.
	PassInterval time.Duration
	// StorePath overrides <state_dir>/dispatch-tui.db.
	StorePath string
	// OnPass, if set, is called after every scheduler pass with its
	// statistics (metrics use it for the pass-duration histogram).
	OnPass func(scheduler.Stats)
}

// Engine is the dispatcher: queue + pool + scheduler + cloud.
type Engine struct {
	cfg   *config.Config
	opts  Options
	log   *slog.Logger
	clock clock.Clock
	queue *queue.Queue
	pool  *worker.Pool
	sched *scheduler.Scheduler

	stepMu sync.Mutex // serialises Step; the scheduler is single-threaded

	mu        sync.Mutex // guards the fields below
	lastStats scheduler.Stats
	poolEvs   []worker.Event // pool events waiting to be written to the log
	subs      map[int]chan struct{}
	nextSub   int
}

// NoFitError is returned by Submit when no configured type can hold the
// container.
type NoFitError struct {
	Why   string
	Types []string
}

func (e *NoFitError) Error() string {
	return "no instance type fits: " + e.Why + " (types: " + strings.Join(e.Types, ", ") + ")"
}

// New opens the store and builds the engine. It starts nothing: call Run
// (or Step in tests).
func New(opts Options) (*Engine, error) {
	if opts.Config == nil || opts.InstanceSet == nil || opts.NewExecutor == nil {
		return nil, errors.New("engine: Config, InstanceSet and NewExecutor are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Owner == "" {
		opts.Owner = "dispatch-tui"
	}
	if opts.PassInterval <= 0 {
		opts.PassInterval = time.Second
	}
	if opts.StorePath == "" {
		opts.StorePath = filepath.Join(opts.Config.Dispatcher.StateDir, "dispatch-tui.db")
	}
	q, err := queue.Open(queue.Options{
		Path: opts.StorePath, Clock: opts.Clock,
		DefaultMaxAttempts: opts.Config.Containers.MaxAttempts,
		EventRetention:     opts.Config.Dispatcher.EventRetention,
		KeepFinished:       opts.Config.Containers.KeepFinished,
	})
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: opts.Config, opts: opts, log: opts.Logger, clock: opts.Clock, queue: q, subs: map[int]chan struct{}{}}
	e.pool, err = worker.New(worker.Options{
		Config: opts.Config, InstanceSet: opts.InstanceSet, NewExecutor: opts.NewExecutor,
		Clock: opts.Clock, Logger: opts.Logger, OnEvent: e.poolEvent, OnLogs: e.storeLogs,
		RunnerHash: opts.RunnerHash, RunnerBinary: opts.RunnerBinary, Owner: opts.Owner,
	})
	if err != nil {
		q.Close()
		return nil, fmt.Errorf("start worker pool: %w", err)
	}
	e.sched = scheduler.New(opts.Config, q, e.pool, opts.Clock, opts.Logger)
	return e, nil
}

// poolEvent buffers a pool event: the pool may call it while the scheduler
// holds the queue's lock, so it must not touch the queue itself.
func (e *Engine) poolEvent(ev worker.Event) {
	e.mu.Lock()
	e.poolEvs = append(e.poolEvs, ev)
	e.mu.Unlock()
}

// storeLogs keeps a finished container's output before its runner forgets
// it; called from a pool goroutine that holds no lock.
func (e *Engine) storeLogs(id string, output []byte) {
	if err := e.queue.StoreLogs(id, output); err != nil {
		e.log.Error("store container logs", "container", id, "err", err)
	}
}

func (e *Engine) recordPoolEvents() {
	e.mu.Lock()
	evs := e.poolEvs
	e.poolEvs = nil
	e.mu.Unlock()
	for _, ev := range evs {
		e.queue.AppendEvent("pool", ev.Kind, string(ev.Instance), ev.Kind, ev.Message)
	}
}

// Run drives the engine until ctx ends: a step on every change and at least
// every PassInterval, at most 20 a second.
func (e *Engine) Run(ctx context.Context) {
	qch, unsub := e.queue.Subscribe()
	defer unsub()
	tick := time.NewTicker(e.opts.PassInterval)
	defer tick.Stop()
	const minGap = 50 * time.Millisecond
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-qch:
		case <-e.pool.Changed():
		}
		if wait := minGap - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		e.Step()
	}
}

// Step runs the pool's due work and one scheduler pass.
func (e *Engine) Step() scheduler.Stats {
	e.stepMu.Lock()
	defer e.stepMu.Unlock()
	e.pool.Step()
	e.recordPoolEvents()
	st := e.sched.RunPass()
	e.mu.Lock()
	e.lastStats = st
	e.mu.Unlock()
	if e.opts.OnPass != nil {
		e.opts.OnPass(st)
	}
	e.notify()
	return st
}

// Settle waits for every cloud and runner call started so far (tests).
func (e *Engine) Settle() { e.pool.Wait() }

// Close stops the pool (instances and containers keep running) and closes
// the store.
func (e *Engine) Close() error {
	e.pool.Stop()
	e.recordPoolEvents()
	e.mu.Lock()
	for id, ch := range e.subs {
		close(ch)
		delete(e.subs, id)
	}
	e.mu.Unlock()
	return e.queue.Close()
}

// Subscribe returns a channel that receives a value (coalesced) after every
// step and verb, and a function to stop.
func (e *Engine) Subscribe() (<-chan struct{}, func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	id := e.nextSub
	e.nextSub++
	ch := make(chan struct{}, 1)
	e.subs[id] = ch
	return ch, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if c, ok := e.subs[id]; ok {
			close(c)
			delete(e.subs, id)
		}
	}
}

func (e *Engine) notify() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ch := range e.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Config returns the engine's configuration.
func (e *Engine) Config() *config.Config { return e.cfg }

// ---- snapshot surface ----

// Instances returns every instance in the pool.
func (e *Engine) Instances() []worker.InstanceView { return e.pool.Instances(nil) }

// Instance returns one instance.
func (e *Engine) Instance(id string) (worker.InstanceView, bool) {
	return e.pool.Instance(cloud.InstanceID(id))
}

// Container returns one container.
func (e *Engine) Container(id string) (queue.Container, bool) { return e.queue.Get(id) }

// ListOptions filter, sort and page the container list.
type ListOptions struct {
	States []queue.State // empty = all
	Query  string        // substring of id, name or command
	Sort   string        // "" (scheduling order), "priority", "-priority", "created", "-created", "name", "state"
	Offset int
	Limit  int // 0 = all
}

// Containers returns the containers matching opts and how many match.
func (e *Engine) Containers(opts ListOptions) ([]queue.Container, int) {
	// Filter and sort small entries (the sort keys copied under the
	// queue's lock), then copy out only the requested page: a client
	// paging through 100,000 containers must not make the daemon copy all
	// of them for every page.
	n, _ := e.queue.Len()
	es := make([]listEntry, 0, n)
	e.queue.Each(func(c *queue.Container) bool {
		if len(opts.States) > 0 && !slices.Contains(opts.States, c.State) {
			return true
		}
		if opts.Query != "" && !matches(c, opts.Query) {
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

// TypeSummary is one instance type with how many instances of it exist.
type TypeSummary struct {
	cloud.InstanceType
	Count   int                  `json:"count"`
	ByState map[worker.State]int `json:"by_state"`
}

// Types returns the configured types with instance counts.
func (e *Engine) Types() []TypeSummary {
	out := make([]TypeSummary, len(e.cfg.InstanceTypes))
	idx := map[string]int{}
	for i, t := range e.cfg.InstanceTypes {
		out[i] = TypeSummary{InstanceType: t, ByState: map[worker.State]int{}}
		idx[t.Name] = i
	}
	for _, v := range e.pool.Instances(nil) {
		if i, ok := idx[v.Type]; ok {
			out[i].Count++
			out[i].ByState[v.State]++
		}
	}
	return out
}

// Summary is the header line of the console and GET /v1/summary.
type Summary struct {
	Driver       string                      `json:"driver"`
	Instances    map[worker.State]int        `json:"instances"`
	Containers   map[queue.State]int         `json:"containers"`
	PricePerHour float64                     `json:"price_per_hour"`
	QuotaLimit   int                         `json:"quota_limit"`
	AtQuota      bool                        `json:"at_quota"`
	Paused       bool                        `json:"paused"`
	LongestWait  time.Duration               `json:"longest_wait"`
	LastPass     time.Duration               `json:"last_pass"`
	Behaviors    map[worker.IdleBehavior]int `json:"idle_behaviors"`
	// ContainersGen changes whenever any container's record or pending
	// reason does: a client's copy of the list is current while it stays.
	ContainersGen uint64 `json:"containers_gen"`
}

// Summary returns counts, cost, quota and the paused flag.
func (e *Engine) Summary() Summary {
	s := Summary{
		Driver:    e.cfg.Cloud.Driver,
		Instances: map[worker.State]int{}, Containers: map[queue.State]int{},
		Behaviors: map[worker.IdleBehavior]int{},
		Paused:    e.queue.Paused(), ContainersGen: e.queue.Generation(),
	}
	for _, v := range e.pool.Instances(nil) {
		s.Instances[v.State]++
		s.Behaviors[v.IdleBehavior]++
		if v.State != worker.StateShutdown {
			s.PricePerHour += v.Price
		}
	}
	e.queue.Each(func(c *queue.Container) bool {
		s.Containers[c.State]++
		return true
	})
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

// ErrNoLogs is returned by Logs when a container has no output to show yet.
var ErrNoLogs = errors.New("no logs for this container yet")

// Logs returns a container's output (the last tail lines when tail > 0):
// from its runner while it runs, from the store once it has finished.
func (e *Engine) Logs(ctx context.Context, id string, tail int) ([]byte, error) {
	c, ok := e.queue.Get(id)
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, queue.ErrNotFound)
	}
	if c.State == queue.Running && c.InstanceID != "" {
		out, err := e.pool.Logs(ctx, cloud.InstanceID(c.InstanceID), id, tail)
		if err == nil {
			return out, nil
		}
		// It may have just exited and been forgotten: fall through.
	}
	out, found, err := e.queue.StoredLogs(id)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, ErrNoLogs
	}
	return TailLines(out, tail), nil
}

// TailLines returns the last n lines of b (all of b when n <= 0).
func TailLines(b []byte, n int) []byte {
	if n <= 0 {
		return b
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if b[i] == '\n' {
			n--
			if n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}

// ---- verbs ----

// Submit validates and stores a new container. A container no configured
// type can hold is refused with *NoFitError and nothing is stored.
func (e *Engine) Submit(spec queue.Spec, actor string) (queue.Container, error) {
	if err := spec.Validate(); err != nil {
		return queue.Container{}, err
	}
	if ok, why := e.sched.Fits(spec.RuntimeConstraints); !ok {
		names := make([]string, len(e.cfg.InstanceTypes))
		for i, t := range e.cfg.InstanceTypes {
			names[i] = fmt.Sprintf("%s (%d vCPU, %s RAM, %s scratch, %d GPU)", t.Name, t.VCPUs,
				config.FormatSize(t.RAM), config.FormatSize(t.Scratch), t.GPUs)
		}
		return queue.Container{}, &NoFitError{Why: why, Types: names}
	}
	c, err := e.queue.Submit(spec, actor)
	if err == nil {
		e.notify()
	}
	return c, err
}

// SubmitBatch validates and stores several containers in one commit. If any
// spec is invalid or fits no configured type, nothing is stored.
func (e *Engine) SubmitBatch(specs []queue.Spec, actor string) ([]queue.Container, error) {
	for i := range specs {
		if err := specs[i].Validate(); err != nil {
			return nil, fmt.Errorf("container %d: %w", i, err)
		}
		if ok, why := e.sched.Fits(specs[i].RuntimeConstraints); !ok {
			names := make([]string, len(e.cfg.InstanceTypes))
			for j, t := range e.cfg.InstanceTypes {
				names[j] = t.Name
			}
			return nil, fmt.Errorf("container %d: %w", i, &NoFitError{Why: why, Types: names})
		}
	}
	cs, err := e.queue.SubmitBatch(specs, actor)
	if err == nil {
		e.notify()
	}
	return cs, err
}

func (e *Engine) setBehavior(id, actor, reason string, b worker.IdleBehavior) (worker.InstanceView, error) {
	v, err := e.pool.SetIdleBehavior(cloud.InstanceID(id), b)
	if err != nil {
		return v, fmt.Errorf("instance %s: %w", id, err)
	}
	if err := e.queue.AddEvent(actor, "verb", id, string(b), reason); err != nil {
		e.log.Error("record event", "err", err)
	}
	e.notify()
	return v, nil
}

// HoldInstance stops new containers on an instance and exempts it from
// automatic shutdown.
func (e *Engine) HoldInstance(id, actor, reason string) (worker.InstanceView, error) {
	return e.setBehavior(id, actor, reason, worker.IdleHold)
}

// DrainInstance stops new containers and shuts the instance down once idle.
func (e *Engine) DrainInstance(id, actor, reason string) (worker.InstanceView, error) {
	return e.setBehavior(id, actor, reason, worker.IdleDrain)
}

// RunInstance returns an instance to normal.
func (e *Engine) RunInstance(id, actor, reason string) (worker.InstanceView, error) {
	return e.setBehavior(id, actor, reason, worker.IdleRun)
}

// KillInstance destroys an instance now; its containers go back to the
// queue (an attempt counted) or end Cancelled at max_attempts.
func (e *Engine) KillInstance(id, actor, reason string) (worker.InstanceView, error) {
	if reason == "" {
		reason = "killed by operator"
	}
	v, err := e.pool.KillInstance(cloud.InstanceID(id), reason)
	if err != nil {
		return v, fmt.Errorf("instance %s: %w", id, err)
	}
	err = e.queue.Pass(func(tx *queue.Tx) {
		for _, c := range tx.RunningAtStart() {
			if c.State == queue.Running && c.InstanceID == id {
				if err := tx.Requeue(c, "instance "+id+" killed: "+reason); err != nil {
					e.log.Error("requeue", "container", c.ID, "err", err)
				}
			}
		}
	})
	if err2 := e.queue.AddEvent(actor, "verb", id, "kill", reason); err2 != nil {
		err = errors.Join(err, err2)
	}
	e.notify()
	return v, err
}

// UnknownVerbError is returned by InstanceVerb and ContainerVerb for a
// verb name they do not know.
type UnknownVerbError struct {
	Kind  string // "instance" or "container"
	Verb  string
	Known string
}

func (e *UnknownVerbError) Error() string {
	return fmt.Sprintf("unknown %s verb %q (%s)", e.Kind, e.Verb, e.Known)
}

// InstanceVerb applies an instance verb by name: hold, drain, run or kill.
func (e *Engine) InstanceVerb(id, verb, actor, reason string) (worker.InstanceView, error) {
	switch verb {
	case "hold":
		return e.HoldInstance(id, actor, reason)
	case "drain":
		return e.DrainInstance(id, actor, reason)
	case "run":
		return e.RunInstance(id, actor, reason)
	case "kill":
		return e.KillInstance(id, actor, reason)
	}
	return worker.InstanceView{}, &UnknownVerbError{Kind: "instance", Verb: verb, Known: "hold, drain, run or kill"}
}

// ContainerVerb applies a container verb by name: hold, release or kill.
func (e *Engine) ContainerVerb(id, verb, actor, reason string) (queue.Container, error) {
	switch verb {
	case "hold":
		return e.HoldContainer(id, actor, reason)
	case "release":
		return e.ReleaseContainer(id, actor, reason)
	case "kill":
		return e.KillContainer(id, actor, reason)
	}
	return queue.Container{}, &UnknownVerbError{Kind: "container", Verb: verb, Known: "hold, release or kill"}
}

// HoldContainer keeps a container from starting.
func (e *Engine) HoldContainer(id, actor, reason string) (queue.Container, error) {
	c, err := e.queue.Hold(id, actor, reason)
	e.notify()
	return c, err
}

// ReleaseContainer makes a held container eligible again.
func (e *Engine) ReleaseContainer(id, actor, reason string) (queue.Container, error) {
	c, err := e.queue.Release(id, actor, reason)
	e.notify()
	return c, err
}

// SetPriority changes a container's priority.
func (e *Engine) SetPriority(id string, priority int, actor, reason string) (queue.Container, error) {
	c, err := e.queue.SetPriority(id, priority, actor, reason)
	e.notify()
	return c, err
}

// KillContainer cancels a queued container, or kills a running one (TERM,
// then KILL after kill_grace) and cancels it once it is dead.
func (e *Engine) KillContainer(id, actor, reason string) (queue.Container, error) {
	c, err := e.queue.Kill(id, actor, reason)
	if err == nil && c.State == queue.Running && c.InstanceID != "" {
		e.pool.KillContainer(cloud.InstanceID(c.InstanceID), c.ID)
	}
	e.notify()
	return c, err
}

// Pause stops the scheduler starting containers and creating instances.
func (e *Engine) Pause(actor, reason string) error {
	err := e.queue.SetPaused(true, actor, reason)
	e.notify()
	return err
}

// Resume undoes Pause.
func (e *Engine) Resume(actor, reason string) error {
	err := e.queue.SetPaused(false, actor, reason)
	e.notify()
	return err
}
