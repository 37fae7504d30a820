// Package engine wires the container queue, the worker pool, the scheduler
// and a cloud driver into one Engine: the single surface (snapshot,
// subscribe, verbs) that the API server and the TUI use.
package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/cost"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/scheduler"
	"dispatch-tui/engine/store"
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
	// Owner tags the instances this dispatcher manages; default the
	// cluster_id (configured, or kept in the store; see clusterid.go).
	Owner string
	// AdoptLegacyOwner, with Owner set, also adopts (and retags with
	// Owner) instances tagged LegacyOwner: ClusterIdentity.AdoptLegacy.
	AdoptLegacyOwner bool
	// PassInterval is the longest time between passes; default 1s.
	PassInterval time.Duration
	// StorePath overrides <state_dir>/dispatch-tui.db.
	StorePath string
	// Store, if set, is the store OpenStore opened (the caller resolved
	// Owner from it): the engine owns it from New on, failed or not.
	Store store.Store
	// OnPass, if set, is called after every scheduler pass with its
	// statistics (metrics use it for the pass-duration histogram).
	OnPass func(scheduler.Stats)
	// Leader, if set, runs the engine as one term of this node's
	// leadership (leader.go); nil: a single dispatcher.
	Leader *Leader
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
	// noticed is recordExits' buffer (under stepMu).
	noticed []worker.InstanceView
	// writeSteps writes what steps changed: queue.FlushPass (tests slow
	// it down, as a busy disk would).
	writeSteps func() error

	output outputCounters // output.go

	ledger *cost.Ledger // cost.go; fed in Step
	// behaviors are the idle behaviours verbs set, kept in the store
	// (keptbehavior.go); the pool writes them.
	behaviors *keptBehaviors
	costFeed  costFeed // Step's scratch (stepMu)

	mu        sync.Mutex // guards the fields below
	lastStats scheduler.Stats
	poolEvs   []worker.Event // pool events waiting to be written to the log
	subs      map[int]chan struct{}
	nextSub   int
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
	if opts.PassInterval <= 0 {
		opts.PassInterval = time.Second
	}
	if opts.StorePath == "" {
		opts.StorePath = filepath.Join(opts.Config.Dispatcher.StateDir, StoreFile)
	}
	st := opts.Store
	if st == nil {
		var existed bool
		var err error
		if st, existed, err = OpenStore(opts.Config, opts.StorePath); err != nil {
			return nil, err
		}
		if opts.Owner == "" {
			ci, err := ResolveClusterID(opts.Config, st, existed)
			if err != nil {
				st.Close()
				return nil, err
			}
			ci.Log(opts.Logger)
			opts.Owner, opts.AdoptLegacyOwner = ci.ID, ci.AdoptLegacy
		}
	}
	return build(opts, st)
}

// build is New past opening the store; it closes st when it fails.
func build(opts Options, st store.Store) (*Engine, error) {
	var legacyOwner string
	if opts.AdoptLegacyOwner {
		legacyOwner = LegacyOwner
	}
	ledger := cost.New(0)
	var counted []string
	for _, b := range opts.Config.Budgets {
		counted = append(counted, b.Label)
	}
	ledger.CountLabels(counted)
	behaviors := newKeptBehaviors()
	q, err := queue.Open(queue.Options{
		Store: st, Clock: opts.Clock,
		DefaultMaxAttempts: opts.Config.Containers.MaxAttempts,
		DefaultPreemptible: opts.Config.Containers.AlwaysUsePreemptible,
		KeepFinished:       opts.Config.Containers.KeepFinished,
		Parts:              []queue.Part{ledger, behaviors},
		// A store that cannot write is tried again a pass later, then
		// less and less often (docs/design.md §10.1).
		StoreRetry: opts.PassInterval,
	})
	if err != nil {
		return nil, err // Open closed st
	}
	e := &Engine{cfg: opts.Config, opts: opts, log: opts.Logger, clock: opts.Clock, queue: q, ledger: ledger, behaviors: behaviors, subs: map[int]chan struct{}{}}
	if r, ok := opts.InstanceSet.(cloud.OwnershipRecaller); ok {
		r.RecallOwned(instancesInUse(q))
	}
	wopts := worker.Options{
		Config: opts.Config, InstanceSet: opts.InstanceSet, NewExecutor: opts.NewExecutor,
		Clock: opts.Clock, Logger: opts.Logger, OnEvent: e.poolEvent, OnLogsBatch: e.storeLogsBatch, OnLogsLost: e.logsLost,
		RunnerHash: opts.RunnerHash, RunnerBinary: opts.RunnerBinary, Owner: opts.Owner,
		LegacyOwner: legacyOwner, Behaviors: behaviors,
	}
	if l := opts.Leader; l != nil {
		wopts.Epoch, wopts.MayAct, wopts.OnFenced = l.Epoch, l.MayAct, l.Fenced
	}
	e.pool, err = worker.New(wopts)
	if err != nil {
		q.Close()
		return nil, fmt.Errorf("start worker pool: %w", err)
	}
	e.sched = scheduler.New(opts.Config, q, e.pool, opts.Clock, opts.Logger)
	e.writeSteps = opts.Leader.fencedWrites(q.FlushPass)
	e.sched.RecordStartsFirst(func() error { return e.writeSteps() }, recordsStartsFirst(st))
	return e, nil
}

// poolEvent buffers a pool event: the pool may call it while the scheduler
// holds the queue's lock, so it must not touch the queue itself.
func (e *Engine) poolEvent(ev worker.Event) {
	e.mu.Lock()
	e.poolEvs = append(e.poolEvs, ev)
	e.mu.Unlock()
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

// Step runs the pool's due work and one scheduler pass, written to the
// store before it returns.
func (e *Engine) Step() scheduler.Stats { return e.step(nil) }

// step is Step, with the pass written by w unless w is nil.
func (e *Engine) step(w *passWriter) scheduler.Stats {
	e.stepMu.Lock()
	defer e.stepMu.Unlock()
	e.pool.Step()
	e.recordPoolEvents()
	// A pass that would change nothing is not run (scheduler.Quiet): on
	// a quiet queue of a million containers it is the daemon's whole CPU.
	// The write still goes: the pool's events and the ledger ride it.
	st, quiet := e.sched.QuietWith(e.takeViews)
	var wr scheduler.Write
	if !quiet {
		st, wr = e.sched.Pass()
		e.takeViews() // the ledger sees what the pass did
	} else {
		wr = e.sched.NoPass()
	}
	e.observeCost() // before the write, so the ledger's records ride it
	if w != nil {
		w.add(wr)
	} else {
		wr.Done(e.writeSteps())
	}
	e.mu.Lock()
	e.lastStats = st
	e.mu.Unlock()
	if e.opts.OnPass != nil && !quiet {
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

// ClusterID returns the owner tag of this dispatcher's instances.
func (e *Engine) ClusterID() string { return e.opts.Owner }

// Config returns the engine's configuration.
func (e *Engine) Config() *config.Config { return e.cfg }

// instancesInUse returns the instances the store says may hold containers:
// those of every Locked or Running container. After a restart they are
// the dispatcher's until they answer otherwise (cloud.OwnershipRecaller).
func instancesInUse(q *queue.Queue) []cloud.InstanceID {
	seen := map[cloud.InstanceID]bool{}
	var ids []cloud.InstanceID
	q.Each(func(c *queue.Container) bool {
		if c.State.Final() {
			return false // the active ones come first
		}
		if c.State != queue.Locked && c.State != queue.Running {
			return true // a requeued one may still name its last instance
		}
		if id := cloud.InstanceID(c.InstanceID); id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
		return true
	})
	return ids
}
