// Package worker is the dispatcher's pool of cloud instances (see
// docs/design.md §6): it lists, creates, probes and destroys instances,
// deploys the runner on them, starts and kills containers through it, and
// applies the idle behaviours and timeouts.
//
// The pool keeps all of its state behind one mutex. Cloud and runner calls
// run in goroutines the pool starts and tracks; Step, the verbs and the
// snapshot methods never block on them. Time is read only from the injected
// clock, so a test driving a clock.Fake with Step/Wait/Advance sees a
// deterministic sequence of states.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/statediagram"
)

// Event kinds.
const (
	EventState        = "state"         // an instance changed state (ready, gone)
	EventCloudError   = "cloud_error"   // a cloud call failed
	EventProbeError   = "probe_error"   // an instance became unreachable (or refused its host key)
	EventProbeOK      = "probe_ok"      // an unreachable instance answers again
	EventIdleBehavior = "idle_behavior" // hold/drain/run changed
	EventShutdown     = "shutdown"      // the pool decided to destroy an instance
	EventCreate       = "create"        // a create call succeeded
	EventDisappeared  = "disappeared"   // a live instance vanished from the listing
	// EventShutdownDeferred: timeout_probe passed, but the instance is kept
	// until it answers, for its containers may still run (fence.go).
	EventShutdownDeferred = "shutdown_deferred"
	// EventBootError: an instance failed to boot (timeout_booting, or a
	// failed runner deployment); the message names the step that failed.
	EventBootError = "boot_error"
	// EventGiveUp: timeout_unreachable passed; the instance's containers
	// are requeued although they may still run there.
	EventGiveUp = "give_up"
	// EventPreempted: the provider took a preemptible instance back (an
	// interruption it reported, or one of a preemptible type vanished);
	// its containers are requeued without spending an attempt. Also the
	// provider's notice that it will (spotnotice.go): the instance is drained.
	EventPreempted = "preempted"
	// EventRunnerRedeploy: a ready instance's runner binary was missing
	// (deleted) and was installed again, or its install failed (once per
	// run of failures; retried after a growing delay).
	EventRunnerRedeploy = "runner_redeploy"
	// EventPrice: the provider's price of an instance whose price moves
	// (spot) became unavailable, so it is billed at its type's configured
	// price, or available again (price.go).
	EventPrice = "price"
)

// Options configure a Pool.
type Options struct {
	// Config supplies [cloud], dispatcher.max_instances, the instance types
	// and containers.kill_grace. It is read once, by New, and must be
	// valid: from config.Default() or config.Load, or passed by
	// Config.Validate when built in code. New trusts it: the checks live in
	// engine/config alone.
	Config      *config.Config
	InstanceSet cloud.InstanceSet
	// NewExecutor returns the executor for an instance. It is called once
	// per instance (lazily, from a pool goroutine); the executor is reused
	// and Close()d when the instance leaves the pool or the pool stops.
	NewExecutor func(cloud.Instance) (runner.Executor, error)
	Clock       clock.Clock  // nil = clock.Real{}
	Logger      *slog.Logger // nil = discard
	// OnEvent, if set, is called for every Event, in order, without the
	// pool's lock held (it may call the pool's methods).
	OnEvent func(Event)
	// OnLogsBatch, if set, receives the outputs of a batch of exited
	// containers (a forget batch, or a shutdown's) to store, in one call,
	// so that a store can write them in one transaction, before the
	// runner forgets them (which deletes their files) and before their
	// instance is destroyed. Called from a pool goroutine without the
	// pool's lock held; it returns one error (nil when stored) per
	// container. A container whose output could not be fetched or stored
	// is not forgotten: its runner keeps the files and a later forget
	// retries. Each output holds at most containers.max_output of its
	// end; its Dropped is how many bytes were cut from its start.
	OnLogsBatch func(containerIDs []string, outputs []runner.Output) []error
	// OnLogsLost, if set, is told when the output of an exited container
	// can no longer be stored: its instance is destroyed and could not be
	// reached, or the fetch or the store kept failing for timeout_shutdown.
	// why says so. Called like OnLogsBatch.
	OnLogsLost func(containerID, why string)
	// Epoch is the leader epoch every runner call carries (docs/design.md
	// §11): a runner refuses calls of an older one. 0 = a single
	// dispatcher, nothing checked.
	Epoch int64
	// MayAct, if set, is asked right before every cloud create, destroy
	// and tag write and every runner start and kill: false (this node's
	// lease may have run out) and the call is not sent (ErrNotLeading).
	MayAct func() bool
	// OnFenced, if set, is told (from a pool goroutine) of each runner
	// call refused for an older epoch than the runner has seen.
	OnFenced func(error)
	// RunnerHash is the sha256 (hex) of the runner binary to deploy; ""
	// skips deployment and uses Config.Cloud.RunnerPath as is.
	RunnerHash string
	// RunnerBinary returns the runner binary to install on an instance whose
	// runner reports another hash.
	RunnerBinary func() ([]byte, error)
	// Owner is the cloud.TagOwner value on this dispatcher's instances.
	// Listings are filtered on it ("" lists every instance), and an
	// instance listed with another owner is never adopted or touched.
	Owner string
	// LegacyOwner, if set, is an owner tag this dispatcher also adopts
	// (an upgrade from the constant owner of older versions): such an
	// instance is retagged with Owner when found.
	LegacyOwner string
	// QuotaProbeAfter: after a quota error, allow one create above the
	// estimated quota after this long. 0 = one minute.
	QuotaProbeAfter time.Duration
	// CapacityBackoff: how long a provider type (or the whole provider)
	// is blocked after a capacity error. 0 = one minute.
	CapacityBackoff time.Duration
	// Behaviors, if set, keeps the idle behaviours verbs set
	// (keptbehavior.go); nil trusts the instances' tags alone.
	Behaviors BehaviorKeeper
}

// Event is something that happened to an instance or a cloud call, for the
// event log.
type Event struct {
	Time     time.Time        `json:"time"`
	Instance cloud.InstanceID `json:"instance,omitempty"`
	Kind     string           `json:"kind"`
	Message  string           `json:"message"`
}

// Pool is the worker pool. Use New.
type Pool struct {
	s      settings
	opts   Options
	is     cloud.InstanceSet
	clk    clock.Clock
	calls  *callWatch // deadlines of calls without one of their own
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	// probeCtx is ctx marked clock-bound (calltimeouts.go), once for every
	// probe: each probe's calls are cut by Step on the pool's clock.
	probeCtx context.Context
	changed  chan struct{}
	// exitsNoticed lists the instances with exits noticed since the last
	// TakeNoticedExits or Step (exitnotice.go).
	exitsNoticed []*instance
	types        map[string]cloud.InstanceType
	byProvider   map[string]string // provider type -> cheapest configured type name

	// One copy of the runner binary shared by the installs in flight and
	// dropped after the last (it is tens of MB; a thousand instances
	// booting at once must not each read their own).
	binMu    sync.Mutex
	bin      []byte
	binUsers int

	mu      sync.Mutex
	idle    *sync.Cond // broadcast when running drops to 0
	running int        // goroutines in flight
	stopped bool
	seq     uint64 // orders list issues, start/forget completions, instance additions

	byID        map[cloud.InstanceID]*instance
	list        []*instance // sorted by ID
	pending     []*pendingCreate
	probeCursor int

	cloudBucket   bucket
	probeBucket   bucket
	pausedUntil   time.Time
	capBlocked    map[string]time.Time // provider type -> until
	capBlockedAll time.Time
	bootFails     map[string]*bootFailures // instance type -> its run of failed boots
	quotaEst      int                      // -1 = no estimate
	quotaProbeAt  time.Time
	// retryCreates: per instance type, the tags of a create whose
	// outcome is unknown, for its retry (createretry.go).
	retryCreates map[string]retryCreate
	// Quotas of a scope (quotascope.go): each type's scope, and the
	// estimate of each scope the provider refused a create for.
	typeScope  map[string]string
	scopeQuota map[string]scopedQuota

	syncing        bool
	synced         bool // first listing done
	syncGen        uint64
	nextSync       time.Time
	lastSyncIssued time.Time
	ready          bool
	ignored        map[cloud.InstanceID]bool
	foreign        map[cloud.InstanceID]cloud.Instance // listed with another owner (foreign.go)
	// The hosts the driver refused after the last listing (refused.go).
	refused      map[cloud.InstanceID]string
	refusedHosts []cloud.RefusedHost
	// preempted: instances the provider took back, removed from the pool,
	// with why, for the scheduler to requeue their containers (preempt.go).
	preempted map[cloud.InstanceID]preemption
	// noticeSyncs: when interruption notices said the provider acts,
	// for listings then (spotnotice.go).
	noticeSyncs []time.Time
	// unpriced: the provider types whose moving price is unavailable now,
	// said once each until it is back (price.go).
	unpriced map[string]bool

	// transitions are the state changes states.txt allows; onTransition,
	// if set (by tests, before the first Step), sees every state change
	// as it is made, with the pool's mutex held.
	transitions  *statediagram.Diagram
	onTransition func(id cloud.InstanceID, from, to State, why string)

	// watchWG: the instances' watch goroutines (exitnotice.go), which last
	// as long as their instance, so Wait does not wait for them; Stop does.
	watchWG sync.WaitGroup

	startFailures []StartFailure
	stats         Stats
	evq, evSpare  []Event
	flushing      bool

	// changes: what readers of changes were shown (changes.go); gen:
	// the instances' generation (generation.go).
	changes changeLog
	gen     uint64
	// tally: the last count of the instances, at a generation (tally.go).
	tally tallyCache

	// refusedUntil: creates wait after a permanent cloud error
	// (cloud.PermanentError), which refusedErr describes.
	refusedUntil time.Time
	refusedErr   string
}

var errStopped = errors.New("worker pool stopped")
var errRemoved = errors.New("instance removed from pool")

// New returns a Pool. It makes no cloud call; the first Step lists the
// instances.
func New(opts Options) (*Pool, error) {
	if opts.Config == nil {
		return nil, errors.New("worker: Options.Config is required")
	}
	if opts.InstanceSet == nil {
		return nil, errors.New("worker: Options.InstanceSet is required")
	}
	if opts.NewExecutor == nil {
		return nil, errors.New("worker: Options.NewExecutor is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c := opts.Config
	s, err := newSettings(c, opts)
	if err != nil {
		return nil, err
	}
	transitions, err := parseStateDiagram(stateDiagram)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	p := &Pool{
		s:           s,
		transitions: transitions,
		opts:        opts,
		is:          opts.InstanceSet,
		clk:         opts.Clock,
		calls:       newCallWatch(opts.Clock),
		log:         opts.Logger,
		changed:     make(chan struct{}, 1),
		types:       make(map[string]cloud.InstanceType, len(c.InstanceTypes)),
		byProvider:  make(map[string]string, len(c.InstanceTypes)),
		byID:        make(map[cloud.InstanceID]*instance),
		capBlocked:  make(map[string]time.Time),
		bootFails:   make(map[string]*bootFailures),
		quotaEst:    -1,
		ignored:     make(map[cloud.InstanceID]bool),
		unpriced:    map[string]bool{},
		foreign:     make(map[cloud.InstanceID]cloud.Instance),
		stats: Stats{
			CloudOps: make(map[string]map[string]int),
			ProbeLatency: newDurationHistogram(time.Millisecond, 2500*time.Microsecond, 5*time.Millisecond,
				10*time.Millisecond, 25*time.Millisecond, 50*time.Millisecond, 100*time.Millisecond,
				250*time.Millisecond, 500*time.Millisecond, time.Second, 2500*time.Millisecond,
				5*time.Second, 10*time.Second, 30*time.Second, time.Minute),
			BootTime: newDurationHistogram(time.Second, 2*time.Second, 5*time.Second, 10*time.Second,
				15*time.Second, 30*time.Second, 45*time.Second, time.Minute, 90*time.Second,
				2*time.Minute, 3*time.Minute, 5*time.Minute, 10*time.Minute, 15*time.Minute, 30*time.Minute),
		},
	}
	for _, it := range c.InstanceTypes {
		if it.ProviderType == "" {
			it.ProviderType = it.Name
		}
		if _, dup := p.types[it.Name]; dup {
			return nil, fmt.Errorf("worker: duplicate instance type %q", it.Name)
		}
		p.types[it.Name] = it
		if cur, ok := p.byProvider[it.ProviderType]; !ok || it.Price < p.types[cur].Price {
			p.byProvider[it.ProviderType] = it.Name
		}
	}
	p.initQuotaScopes()
	p.idle = sync.NewCond(&p.mu)
	// Drivers ask the lease again before each send of a mutation they
	// retry (cloud.WithGuard), not only before the call.
	p.ctx, p.cancel = context.WithCancel(cloud.WithGuard(context.Background(), p.mayAct))
	p.probeCtx = clockBound(p.ctx)
	now := p.clk.Now()
	p.cloudBucket = newBucket(c.Cloud.MaxCloudOpsPerSecond, now)
	p.probeBucket = newBucket(c.Cloud.MaxProbesPerSecond, now)
	return p, nil
}

// goLocked runs fn in a tracked goroutine. p.mu must be held. It returns
// false (and runs nothing) once the pool is stopped.
func (p *Pool) goLocked(fn func()) bool {
	if p.stopped {
		return false
	}
	p.running++
	go func() {
		defer p.goDone()
		fn()
	}()
	return true
}

func (p *Pool) goDone() {
	p.flush()
	p.mu.Lock()
	p.running--
	if p.running == 0 {
		p.idle.Broadcast()
	}
	p.mu.Unlock()
}

// Wait blocks until no goroutine started by the pool is running.
func (p *Pool) Wait() {
	p.mu.Lock()
	for p.running > 0 {
		p.idle.Wait()
	}
	p.mu.Unlock()
}

// Stop cancels in-flight calls, waits for the pool's goroutines and closes
// the executors. Instances keep running. The pool does nothing after Stop.
func (p *Pool) Stop() {
	p.mu.Lock()
	p.stopped = true
	p.wakeWaitersLocked()
	p.mu.Unlock()
	p.cancel()
	p.Wait()
	p.watchWG.Wait()
	p.mu.Lock()
	var execs []runner.Executor
	for _, w := range p.list {
		if w.exec != nil {
			execs = append(execs, w.exec)
			w.exec = nil
		}
	}
	p.mu.Unlock()
	for _, e := range execs {
		e.Close()
	}
	p.flush()
}

// eventLocked logs an event and queues it for OnEvent. p.mu must be held.
func (p *Pool) eventLocked(now time.Time, id cloud.InstanceID, kind, msg string, level slog.Level) {
	p.log.Log(context.Background(), level, msg, "instance", string(id), "event", kind)
	if p.opts.OnEvent != nil {
		p.evq = append(p.evq, Event{Time: now, Instance: id, Kind: kind, Message: msg})
	}
}

// flush delivers queued events without the lock held, in order. Only one
// caller delivers at a time; others leave their events to it.
func (p *Pool) flush() {
	if p.opts.OnEvent == nil {
		return
	}
	p.mu.Lock()
	if p.flushing || len(p.evq) == 0 {
		p.mu.Unlock()
		return
	}
	p.flushing = true
	for len(p.evq) > 0 {
		evs := p.evq
		p.evq = p.evSpare[:0]
		p.mu.Unlock()
		for i := range evs {
			p.opts.OnEvent(evs[i])
		}
		clear(evs)
		p.mu.Lock()
		p.evSpare = evs[:0]
	}
	p.flushing = false
	p.mu.Unlock()
}

// notifyLocked signals Changed without blocking.
func (p *Pool) notifyLocked() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// Changed returns a channel that receives a value (coalesced) whenever
// instance state changes.
func (p *Pool) Changed() <-chan struct{} { return p.changed }

func (p *Pool) nextSeqLocked() uint64 {
	p.seq++
	return p.seq
}

func (p *Pool) canceled() bool { return p.ctx.Err() != nil }

// Step does the work due at Clock.Now(): listing, probes, timeouts and
// automatic shutdowns, destroy retries, KILL after kill_grace, tag writes,
// and the cut of runner calls past their deadlines.
// It starts goroutines and never waits for them.
func (p *Pool) Step() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.dropNoticedExitsLocked() // the pass after this step reads them all
	now := p.clk.Now()
	if !p.syncing && !now.Before(p.nextSync) && p.cloudAllowedLocked(now) {
		p.startSyncLocked(now)
	}
	for _, w := range p.list {
		p.giveUpUnreachableLocked(w, now)
		if w.v.State == StateShutdown {
			if !w.destroying && !w.destroyed && !w.collecting && !now.Before(w.destroyRetry) {
				p.startDestroyLocked(w, now)
			}
			continue
		}
		if w.v.IdleBehavior != IdleHold {
			if reason := p.autoShutdownReason(w, now); reason != "" {
				if w.v.State == StateBooting {
					if stuck := or(w.v.LastError, w.v.ProbeError); stuck != "" {
						// The step it is stuck at first: LAST ERROR is clipped.
						reason = stuck + " (" + reason + ")"
					}
					p.bootFailedLocked(w, now, reason)
				} else {
					w.shutdown(now, reason)
				}
				continue
			}
		}
		p.checkProbeDeadlineLocked(w, now)
		if len(w.kills) > 0 {
			p.checkKillsLocked(w, now)
		}
		if w.tagsDirty && !w.tagsInFlight {
			p.startTagsLocked(w, now)
		}
	}
	p.calls.cut(now)
	p.startProbesLocked(now)
	p.startWatchesLocked(now)
	p.publishLocked()
	p.mu.Unlock()
	p.flush()
}
