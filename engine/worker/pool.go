// Package worker is the dispatcher's pool of cloud instances (DESIGN §6):
// it lists, creates, probes and destroys instances, deploys the runner on
// them, starts and kills containers through it, and applies the idle
// behaviours and timeouts.
//
// The pool keeps all of its state behind one mutex. Cloud and runner calls
// run in goroutines the pool starts and tracks; Step, the verbs and the
// snapshot methods never block on them. Time is read only from the injected
// clock, so a test driving a clock.Fake with Step/Wait/Advance sees a
// deterministic sequence of states.
package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/runner"
)

// Event kinds.
const (
	EventState        = "state"         // an instance changed state (ready, gone)
	EventCloudError   = "cloud_error"   // a cloud call failed
	EventProbeError   = "probe_error"   // an instance's probes started failing
	EventIdleBehavior = "idle_behavior" // hold/drain/run changed
	EventShutdown     = "shutdown"      // the pool decided to destroy an instance
	EventCreate       = "create"        // a create call succeeded
	EventDisappeared  = "disappeared"   // a live instance vanished from the listing
)

// Options configure a Pool.
type Options struct {
	// Config supplies [cloud], dispatcher.max_instances, the instance types
	// and containers.kill_grace. It is read once, by New.
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
	// OnLogs, if set, receives the tail of an exited container's output just
	// before the runner forgets it (which deletes its files). Called from a
	// pool goroutine without the pool's lock held. If fetching the output
	// fails, the container is not forgotten (the next forget retries).
	OnLogs func(containerID string, output []byte)
	// RunnerHash is the sha256 (hex) of the runner binary to deploy; ""
	// skips deployment and uses Config.Cloud.RunnerPath as is.
	RunnerHash string
	// RunnerBinary returns the runner binary to install on an instance whose
	// runner reports another hash.
	RunnerBinary func() ([]byte, error)
	// Owner is the cloud.TagOwner value on this dispatcher's instances.
	// Listings are filtered on it ("" lists every instance).
	Owner string
	// QuotaProbeAfter: after a quota error, allow one create above the
	// estimated quota after this long. Default 1m.
	QuotaProbeAfter time.Duration
	// CapacityBackoff: how long a provider type (or the whole provider)
	// is blocked after a capacity error. Default 1m.
	CapacityBackoff time.Duration
}

// Event is something that happened to an instance or a cloud call, for the
// event log.
type Event struct {
	Time     time.Time        `json:"time"`
	Instance cloud.InstanceID `json:"instance,omitempty"`
	Kind     string           `json:"kind"`
	Message  string           `json:"message"`
}

// Stats are the pool's counters, for metrics.
type Stats struct {
	// CloudOps counts cloud calls: op (create, destroy, list, set_tags) ->
	// error kind ("" ok, quota, capacity, rate_limit, other) -> count.
	CloudOps      map[string]map[string]int
	Probes        int           // probes completed
	ProbeFailures int           // probes that failed
	ProbeTime     time.Duration // total latency of completed probes
	ProbeMaxTime  time.Duration // longest probe
	RunnerDeploys int           // runner binaries installed
	Starts        int           // "runner start" calls completed
	StartFailures int           // of which failed
	Kills         int           // "runner kill" calls issued
	Creating      int           // create calls in flight now
	QuotaLimit    int           // effective instance cap now (Quota)
	AtQuota       bool
	PausedUntil   time.Time // cloud calls paused by a rate limit until then
	// ProbeLatency holds the latency of every completed probe (the
	// observations summed in ProbeTime).
	ProbeLatency DurationHistogram
	// BootTime holds, for each instance this pool created, the time from
	// the create request to its first successful probe (ready).
	BootTime DurationHistogram
}

// DurationHistogram counts observations in fixed buckets (for metrics).
type DurationHistogram struct {
	// Bounds are the buckets' inclusive upper bounds, ascending. The slice
	// is fixed when the pool is created and shared by every copy: do not
	// modify it.
	Bounds []time.Duration
	// Counts[i] is the number of observations in (Bounds[i-1], Bounds[i]];
	// the last element (len(Bounds)) counts those above every bound.
	Counts []uint64
	Count  uint64        // observations
	Sum    time.Duration // their total
}

func newDurationHistogram(bounds ...time.Duration) DurationHistogram {
	return DurationHistogram{Bounds: bounds, Counts: make([]uint64, len(bounds)+1)}
}

func (h *DurationHistogram) observe(d time.Duration) {
	i, _ := slices.BinarySearch(h.Bounds, d)
	h.Counts[i]++
	h.Count++
	h.Sum += d
}

// clone returns a copy that does not share Counts.
func (h DurationHistogram) clone() DurationHistogram {
	h.Counts = slices.Clone(h.Counts)
	return h
}

// Pool is the worker pool. Use New.
type Pool struct {
	s          settings
	opts       Options
	is         cloud.InstanceSet
	clk        clock.Clock
	log        *slog.Logger
	ctx        context.Context
	cancel     context.CancelFunc
	changed    chan struct{}
	types      map[string]cloud.InstanceType
	byProvider map[string]string // provider type -> cheapest configured type name

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
	seq     uint64 // orders list issues, start/forget completions, worker additions

	workers     map[cloud.InstanceID]*worker
	list        []*worker // sorted by ID
	pending     []*pendingCreate
	probeCursor int

	cloudBucket   bucket
	probeBucket   bucket
	pausedUntil   time.Time
	capBlocked    map[string]time.Time // provider type -> until
	capBlockedAll time.Time
	quotaEst      int // -1 = no estimate
	quotaProbeAt  time.Time

	syncing        bool
	synced         bool // first listing done
	syncGen        uint64
	nextSync       time.Time
	lastSyncIssued time.Time
	ready          bool
	ignored        map[cloud.InstanceID]bool

	startFailures []StartFailure
	stats         Stats
	evq, evSpare  []Event
	flushing      bool
}

// settings are the config values the pool uses, with defaults applied.
type settings struct {
	maxInstances         int // <= 0: unlimited
	runnerPath           string
	bootProbe            string
	timeoutIdle          time.Duration
	timeoutBooting       time.Duration
	timeoutProbe         time.Duration
	timeoutShutdown      time.Duration
	probeInterval        time.Duration
	bootProbeInterval    time.Duration
	syncInterval         time.Duration
	syncSoon             time.Duration
	killGrace            time.Duration
	maxConcurrentCreates int // <= 0: unlimited
	quotaProbeAfter      time.Duration
	capacityBackoff      time.Duration
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

type pendingCreate struct {
	view InstanceView
}

type startEntry struct {
	id      string
	seq     uint64 // when issued
	doneSeq uint64 // when it completed successfully (0 = in flight)
}

type killEntry struct {
	id       string
	termAt   time.Time
	termSeq  uint64
	killSent bool
}

type forgotEntry struct {
	id  string
	seq uint64
}

// worker is one instance in the pool.
type worker struct {
	inst  cloud.Instance
	itype cloud.InstanceType
	v     InstanceView // Containers and Reported are owned by the worker
	exec  runner.Executor

	removed  bool
	addedSeq uint64
	seenGen  uint64
	initial  bool // found by the first listing
	probed   bool // probed at least once

	probing      bool
	nextProbe    time.Time
	probeFailing bool
	lastProbeOK  time.Time
	readyAt      time.Time
	createdAt    time.Time // when this pool asked for it (zero: found in a listing)
	listSeq      uint64

	csSpare    []string // spare buffer for Containers
	starts     []startEntry
	kills      []killEntry
	forgetting []string
	forgotten  []forgotEntry

	// Specs and ids waiting for the next "runner batch" call, and whether
	// a goroutine is sending batches for this instance.
	startQ     []runner.Spec
	startBusy  bool
	forgetQ    []string
	forgetBusy bool

	destroying bool
	destroyed  bool // last Destroy call succeeded
	destroyAt  time.Time
	// destroyRetry: after a failed destroy, no new attempt before this.
	destroyRetry    time.Time
	destroyFailures int

	tagsDirty    bool
	tagsInFlight bool
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
	s := settings{
		maxInstances:         c.Dispatcher.MaxInstances,
		runnerPath:           c.Cloud.RunnerPath,
		bootProbe:            c.Cloud.BootProbeCommand,
		timeoutIdle:          orDefault(c.Cloud.TimeoutIdle, time.Minute),
		timeoutBooting:       orDefault(c.Cloud.TimeoutBooting, 10*time.Minute),
		timeoutProbe:         orDefault(c.Cloud.TimeoutProbe, 10*time.Minute),
		timeoutShutdown:      orDefault(c.Cloud.TimeoutShutdown, 10*time.Second),
		probeInterval:        orDefault(c.Cloud.ProbeInterval, 10*time.Second),
		syncInterval:         orDefault(c.Cloud.SyncInterval, time.Minute),
		killGrace:            orDefault(c.Containers.KillGrace, 30*time.Second),
		maxConcurrentCreates: c.Cloud.MaxConcurrentCreates,
		quotaProbeAfter:      orDefault(opts.QuotaProbeAfter, time.Minute),
		capacityBackoff:      orDefault(opts.CapacityBackoff, time.Minute),
	}
	if s.runnerPath == "" {
		s.runnerPath = "/tmp/dispatch-tui-runner"
	}
	if opts.RunnerHash != "" {
		s.runnerPath += "~" + opts.RunnerHash
	}
	s.bootProbeInterval = min(s.probeInterval, time.Second)
	s.syncSoon = min(s.syncInterval, 5*time.Second)
	p := &Pool{
		s:          s,
		opts:       opts,
		is:         opts.InstanceSet,
		clk:        opts.Clock,
		log:        opts.Logger,
		changed:    make(chan struct{}, 1),
		types:      make(map[string]cloud.InstanceType, len(c.InstanceTypes)),
		byProvider: make(map[string]string, len(c.InstanceTypes)),
		workers:    make(map[cloud.InstanceID]*worker),
		capBlocked: make(map[string]time.Time),
		quotaEst:   -1,
		ignored:    make(map[cloud.InstanceID]bool),
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
	p.idle = sync.NewCond(&p.mu)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	now := p.clk.Now()
	p.cloudBucket = newBucket(c.Cloud.MaxCloudOpsPerSecond, now)
	p.probeBucket = newBucket(c.Cloud.MaxProbesPerSecond, now)
	return p, nil
}

// RunnerPath returns the path of the runner on instances (config
// runner_path plus "~<hash>" when a hash is deployed).
func (p *Pool) RunnerPath() string { return p.s.runnerPath }

// ---------------------------------------------------------------------------
// goroutines, events, notifications

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
	p.mu.Unlock()
	p.cancel()
	p.Wait()
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

// countOpLocked records a cloud call in Stats.
func (p *Pool) countOpLocked(op string, err error) {
	m := p.stats.CloudOps[op]
	if m == nil {
		m = make(map[string]int, 2)
		p.stats.CloudOps[op] = m
	}
	m[cloud.ErrorKind(err)]++
}

// cloudErrLocked handles a failed cloud call: a rate-limit error pauses
// every cloud call; every error is logged and becomes an event.
func (p *Pool) cloudErrLocked(now time.Time, id cloud.InstanceID, op string, err error) {
	if rl, ok := cloud.AsRateLimit(err); ok {
		until := rl.RetryAfter
		if !until.After(now) {
			until = now.Add(time.Second)
		}
		if until.After(p.pausedUntil) {
			p.pausedUntil = until
		}
	}
	p.eventLocked(now, id, EventCloudError, fmt.Sprintf("%s failed (%s): %v", op, cloud.ErrorKind(err), err), slog.LevelWarn)
}

// cloudAllowedLocked reports whether a cloud call may be made now, and if
// so takes a token from the cloud-op bucket.
func (p *Pool) cloudAllowedLocked(now time.Time) bool {
	if now.Before(p.pausedUntil) {
		return false
	}
	return p.cloudBucket.take(now)
}

func (p *Pool) canceled() bool { return p.ctx.Err() != nil }

// ---------------------------------------------------------------------------
// Step

// Step does the work due at Clock.Now(): listing, probes, timeouts and
// automatic shutdowns, destroy retries, KILL after kill_grace, tag writes.
// It starts goroutines and never waits for them.
func (p *Pool) Step() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	now := p.clk.Now()
	if !p.syncing && !now.Before(p.nextSync) && p.cloudAllowedLocked(now) {
		p.startSyncLocked(now)
	}
	for _, w := range p.list {
		if w.v.State == StateShutdown {
			if !w.destroying && !w.destroyed && !now.Before(w.destroyRetry) {
				p.startDestroyLocked(w, now)
			}
			continue
		}
		if w.v.IdleBehavior != IdleHold {
			if reason := p.autoShutdownReason(w, now); reason != "" {
				p.shutdownLocked(w, now, reason)
				continue
			}
		}
		if len(w.kills) > 0 {
			p.checkKillsLocked(w, now)
		}
		if w.tagsDirty && !w.tagsInFlight {
			p.startTagsLocked(w, now)
		}
	}
	p.startProbesLocked(now)
	p.mu.Unlock()
	p.flush()
}

// autoShutdownReason returns why w should be shut down now ("" = keep).
// The caller has checked that w is not held.
func (p *Pool) autoShutdownReason(w *worker, now time.Time) string {
	switch w.v.State {
	case StateBooting:
		if now.Sub(w.v.AppearedAt) > p.s.timeoutBooting {
			return fmt.Sprintf("boot timeout: not ready after %s", p.s.timeoutBooting)
		}
		return ""
	case StateUnknown, StateIdle, StateRunning:
		if w.probeFailing {
			since := w.v.AppearedAt
			if w.lastProbeOK.After(since) {
				since = w.lastProbeOK
			}
			if now.Sub(since) > p.s.timeoutProbe {
				return fmt.Sprintf("probe timeout: probes failing for %s: %s", now.Sub(since).Round(time.Second), w.v.LastError)
			}
		}
	}
	if w.v.State != StateIdle || len(w.starts) > 0 || len(w.v.Containers) > 0 {
		return ""
	}
	switch w.v.IdleBehavior {
	case IdleDrain:
		return "drained"
	case IdleRun:
		since := w.v.LastBusy
		if w.readyAt.After(since) {
			since = w.readyAt
		}
		if now.Sub(since) >= p.s.timeoutIdle {
			return fmt.Sprintf("idle for %s", now.Sub(since).Round(time.Second))
		}
	}
	return ""
}

// shutdownLocked moves w to state shutdown and starts destroying it.
func (p *Pool) shutdownLocked(w *worker, now time.Time, reason string) {
	if w.v.State == StateShutdown {
		return
	}
	w.v.State = StateShutdown
	w.tagsDirty = false
	w.kills = nil
	p.eventLocked(now, w.v.ID, EventShutdown, "shutdown: "+reason, slog.LevelInfo)
	p.notifyLocked()
	p.startDestroyLocked(w, now)
}

func (p *Pool) startDestroyLocked(w *worker, now time.Time) {
	if w.destroying || !p.cloudAllowedLocked(now) {
		return
	}
	w.destroying = true
	inst := w.inst
	if !p.goLocked(func() {
		err := inst.Destroy(p.ctx)
		p.mu.Lock()
		defer p.mu.Unlock()
		w.destroying = false
		if err != nil && p.canceled() {
			return
		}
		now := p.clk.Now()
		p.countOpLocked("destroy", err)
		if err != nil {
			w.v.LastError = err.Error()
			p.cloudErrLocked(now, w.v.ID, "destroy", err)
			// Retry, but not on every step: a host that refuses forever
			// would flood the cloud and the event log.
			w.destroyFailures++
			w.destroyRetry = now.Add(min(time.Duration(w.destroyFailures)*time.Second, p.s.timeoutShutdown))
			return
		}
		w.destroyed = true
		w.destroyAt = now
		p.log.Info("destroyed instance", "instance", string(w.v.ID))
		p.syncAtLocked(now.Add(p.s.timeoutShutdown))
	}) {
		w.destroying = false
	}
}

func (p *Pool) startTagsLocked(w *worker, now time.Time) {
	if !p.cloudAllowedLocked(now) {
		return
	}
	w.tagsInFlight = true
	b := w.v.IdleBehavior
	inst := w.inst
	if !p.goLocked(func() {
		tags := inst.Tags().Clone()
		tags[cloud.TagIdleBehavior] = string(b)
		err := inst.SetTags(p.ctx, tags)
		p.mu.Lock()
		defer p.mu.Unlock()
		w.tagsInFlight = false
		if err != nil && p.canceled() {
			return
		}
		p.countOpLocked("set_tags", err)
		if err != nil {
			p.cloudErrLocked(p.clk.Now(), w.v.ID, "set tags", err)
			return
		}
		if w.v.IdleBehavior == b {
			w.tagsDirty = false
		}
	}) {
		w.tagsInFlight = false
	}
}

// syncAtLocked makes the next listing happen no later than t (but not
// sooner than syncSoon after the previous one).
func (p *Pool) syncAtLocked(t time.Time) {
	if earliest := p.lastSyncIssued.Add(p.s.syncSoon); t.Before(earliest) {
		t = earliest
	}
	if t.Before(p.nextSync) {
		p.nextSync = t
	}
}

// ---------------------------------------------------------------------------
// listing

func (p *Pool) startSyncLocked(now time.Time) {
	p.syncing = true
	p.lastSyncIssued = now
	p.nextSync = now.Add(p.s.syncInterval)
	seq := p.nextSeqLocked()
	var filter cloud.Tags
	if p.opts.Owner != "" {
		filter = cloud.Tags{cloud.TagOwner: p.opts.Owner}
	}
	if !p.goLocked(func() {
		insts, err := p.is.Instances(p.ctx, filter)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.syncing = false
		if err != nil && p.canceled() {
			return
		}
		p.countOpLocked("list", err)
		if err != nil {
			p.cloudErrLocked(p.clk.Now(), "", "list instances", err)
			if !p.synced {
				p.nextSync = p.clk.Now().Add(p.s.bootProbeInterval)
			}
			return
		}
		p.syncDoneLocked(insts, seq, now)
	}) {
		p.syncing = false
	}
}

func (p *Pool) syncDoneLocked(insts []cloud.Instance, seq uint64, issued time.Time) {
	now := p.clk.Now()
	p.syncGen++
	gen := p.syncGen
	for _, inst := range insts {
		id := inst.ID()
		if w := p.workers[id]; w != nil {
			w.seenGen = gen
			w.inst = inst
			if a := inst.Address(); a != w.v.Address {
				w.v.Address = a
				p.notifyLocked()
			}
			if w.v.State == StateShutdown && w.destroyed && issued.Sub(w.destroyAt) >= p.s.timeoutShutdown {
				w.destroyed = false
				p.log.Warn("instance still listed after destroy; destroying again", "instance", string(id), "destroyed_at", w.destroyAt)
				p.startDestroyLocked(w, now)
			}
			continue
		}
		if p.ignored[id] {
			continue
		}
		tags := inst.Tags()
		it, ok := p.types[tags[cloud.TagInstanceType]]
		if !ok {
			var name string
			if name, ok = p.byProvider[inst.ProviderType()]; ok {
				it = p.types[name]
			}
		}
		if !ok {
			p.ignored[id] = true
			p.log.Warn("ignoring instance of unknown type", "instance", string(id), "type_tag", tags[cloud.TagInstanceType], "provider_type", inst.ProviderType())
			continue
		}
		b := IdleBehavior(tags[cloud.TagIdleBehavior])
		if !ValidIdleBehavior(b) {
			b = IdleRun
		}
		w := p.addWorkerLocked(inst, it, StateUnknown, b, now)
		w.seenGen = gen
		w.initial = !p.synced
		p.log.Info("found instance", "instance", string(id), "type", it.Name, "idle_behavior", string(b))
	}
	// Remove known instances missing from the listing (those added before
	// the listing was issued; newer ones may simply not be listed yet).
	kept := p.list[:0]
	for _, w := range p.list {
		if w.seenGen == gen || w.addedSeq > seq {
			kept = append(kept, w)
			continue
		}
		if w.v.State == StateShutdown {
			p.eventLocked(now, w.v.ID, EventState, "gone after shutdown", slog.LevelInfo)
		} else {
			p.eventLocked(now, w.v.ID, EventDisappeared, fmt.Sprintf("instance disappeared from the listing (was %s)", w.v.State), slog.LevelWarn)
		}
		p.removeLocked(w)
		p.notifyLocked()
	}
	clear(p.list[len(kept):])
	p.list = kept
	if p.probeCursor >= len(p.list) {
		p.probeCursor = 0
	}
	if !p.synced {
		p.synced = true
		p.notifyLocked()
	}
}

// addWorkerLocked adds an instance to the pool (keeping p.list sorted).
func (p *Pool) addWorkerLocked(inst cloud.Instance, it cloud.InstanceType, st State, b IdleBehavior, now time.Time) *worker {
	w := &worker{
		inst:     inst,
		itype:    it,
		addedSeq: p.nextSeqLocked(),
		v: InstanceView{
			ID:           inst.ID(),
			Type:         it.Name,
			ProviderType: inst.ProviderType(),
			Address:      inst.Address(),
			Price:        it.Price,
			State:        st,
			IdleBehavior: b,
			AppearedAt:   now,
		},
		nextProbe: now,
	}
	if w.v.ProviderType == "" {
		w.v.ProviderType = it.ProviderType
	}
	p.workers[w.v.ID] = w
	i, _ := slices.BinarySearchFunc(p.list, w.v.ID, func(x *worker, id cloud.InstanceID) int {
		return strings.Compare(string(x.v.ID), string(id))
	})
	p.list = slices.Insert(p.list, i, w)
	if i < p.probeCursor {
		p.probeCursor++
	}
	p.notifyLocked()
	return w
}

// removeLocked drops w from the map (not from p.list: the caller does) and
// closes its executor.
func (p *Pool) removeLocked(w *worker) {
	w.removed = true
	delete(p.workers, w.v.ID)
	if e := w.exec; e != nil {
		w.exec = nil
		if !p.goLocked(func() { e.Close() }) {
			go e.Close()
		}
	}
}

// ---------------------------------------------------------------------------
// probes

func (p *Pool) startProbesLocked(now time.Time) {
	n := len(p.list)
	if n == 0 {
		return
	}
	start := p.probeCursor % n
	for i := 0; i < n; i++ {
		j := (start + i) % n
		w := p.list[j]
		if w.probing || w.v.State == StateShutdown || now.Before(w.nextProbe) {
			continue
		}
		if !p.probeBucket.take(now) {
			p.probeCursor = j
			return
		}
		p.startProbeLocked(w, now)
	}
}

type probeMode int

const (
	probeList  probeMode = iota // runner list
	probeBoot                   // boot probe, deploy, list
	probeAdopt                  // deploy, list (instance found in the listing)
)

func (p *Pool) startProbeLocked(w *worker, now time.Time) {
	mode := probeList
	interval := p.s.probeInterval
	switch w.v.State {
	case StateBooting:
		mode = probeBoot
		interval = p.s.bootProbeInterval
	case StateUnknown:
		mode = probeAdopt
	}
	w.probing = true
	w.nextProbe = now.Add(interval)
	if !p.goLocked(func() { p.runProbe(w, mode) }) {
		w.probing = false
	}
}

func (p *Pool) runProbe(w *worker, mode probeMode) {
	t0 := p.clk.Now()
	var (
		sts     []runner.Status
		listSeq uint64
		listAt  time.Time
		stage   string
	)
	exec, err := p.executor(w)
	if err != nil {
		stage = "connect"
	}
	client := runner.Client{Exec: exec, Path: p.s.runnerPath}
	if err == nil && mode == probeBoot && p.s.bootProbe != "" {
		stage = "boot probe"
		_, _, err = exec.Execute(p.ctx, p.s.bootProbe, nil)
	}
	if err == nil && mode != probeList {
		stage = "runner deploy"
		err = p.ensureRunner(exec, &client)
	}
	if err == nil {
		stage = "runner list"
		p.mu.Lock()
		listSeq = p.nextSeqLocked()
		listAt = p.clk.Now()
		p.mu.Unlock()
		sts, err = client.List(p.ctx)
	}
	lat := p.clk.Now().Sub(t0)

	p.mu.Lock()
	defer p.mu.Unlock()
	w.probing = false
	if w.removed || (err != nil && p.canceled()) {
		return
	}
	now := p.clk.Now()
	p.stats.Probes++
	p.stats.ProbeTime += lat
	p.stats.ProbeMaxTime = max(p.stats.ProbeMaxTime, lat)
	p.stats.ProbeLatency.observe(lat)
	w.v.LastProbe = now
	w.probed = true
	if err != nil {
		p.stats.ProbeFailures++
		msg := stage + ": " + err.Error()
		w.v.LastError = msg
		w.v.ProbeFailing = true
		if !w.probeFailing && w.v.State != StateBooting {
			p.eventLocked(now, w.v.ID, EventProbeError, "probe failed: "+msg, slog.LevelWarn)
			p.notifyLocked()
		} else {
			p.log.Debug("probe failed", "instance", string(w.v.ID), "state", string(w.v.State), "error", msg)
		}
		w.probeFailing = true
		return
	}
	changed := w.probeFailing || w.v.LastError != ""
	w.probeFailing = false
	w.lastProbeOK = now
	w.v.LastError = ""
	w.v.ProbeFailing = false
	prev := w.v.State
	if p.applyListLocked(w, sts, listSeq, listAt, now) {
		changed = true
	}
	if prev == StateBooting || prev == StateUnknown {
		if w.v.State == StateShutdown {
			p.notifyLocked()
			return
		}
		w.readyAt = now
		if prev == StateBooting && !w.createdAt.IsZero() {
			p.stats.BootTime.observe(now.Sub(w.createdAt))
		}
		w.v.State = StateIdle
		if len(w.v.Containers) > 0 {
			w.v.State = StateRunning
		}
		p.eventLocked(now, w.v.ID, EventState, fmt.Sprintf("%s -> %s (%d containers)", prev, w.v.State, len(w.v.Containers)), slog.LevelInfo)
		changed = true
	}
	if changed {
		p.notifyLocked()
	}
}

// executor returns w's executor, creating it on first use.
func (p *Pool) executor(w *worker) (runner.Executor, error) {
	p.mu.Lock()
	if e := w.exec; e != nil {
		p.mu.Unlock()
		return e, nil
	}
	if w.removed || p.stopped {
		p.mu.Unlock()
		return nil, errRemoved
	}
	inst := w.inst
	p.mu.Unlock()
	e, err := p.opts.NewExecutor(inst)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if w.exec == nil && !w.removed && !p.stopped {
		w.exec = e
		p.mu.Unlock()
		return e, nil
	}
	cur := w.exec
	p.mu.Unlock()
	e.Close()
	if cur == nil {
		return nil, errRemoved
	}
	return cur, nil
}

// ensureRunner installs the runner if "runner version" does not report
// RunnerHash.
func (p *Pool) ensureRunner(exec runner.Executor, client *runner.Client) error {
	want := p.opts.RunnerHash
	if want == "" {
		return nil
	}
	v, err := client.Version(p.ctx)
	if err == nil && versionHash(v) == want {
		return nil
	}
	if p.canceled() {
		return p.ctx.Err()
	}
	if p.opts.RunnerBinary == nil {
		return fmt.Errorf("runner at %s reports %q, want hash %s, and no binary to install", p.s.runnerPath, v, want)
	}
	bin, err := p.acquireRunnerBinary()
	if err != nil {
		return fmt.Errorf("reading runner binary: %w", err)
	}
	_, stderr, err := exec.Execute(p.ctx, runner.InstallLine(p.s.runnerPath), bin)
	p.releaseRunnerBinary()
	if err != nil {
		return fmt.Errorf("installing runner at %s: %w (%s)", p.s.runnerPath, err, strings.TrimSpace(string(stderr)))
	}
	p.mu.Lock()
	p.stats.RunnerDeploys++
	p.mu.Unlock()
	v, err = client.Version(p.ctx)
	if err != nil {
		return err
	}
	if got := versionHash(v); got != want {
		return fmt.Errorf("runner installed at %s reports hash %q, want %s", p.s.runnerPath, got, want)
	}
	return nil
}

// acquireRunnerBinary returns the shared copy of the runner binary, reading
// it when no install holds it. Pair with releaseRunnerBinary.
func (p *Pool) acquireRunnerBinary() ([]byte, error) {
	p.binMu.Lock()
	defer p.binMu.Unlock()
	if p.binUsers == 0 {
		b, err := p.opts.RunnerBinary()
		if err != nil {
			return nil, err
		}
		p.bin = b
	}
	p.binUsers++
	return p.bin, nil
}

func (p *Pool) releaseRunnerBinary() {
	p.binMu.Lock()
	defer p.binMu.Unlock()
	if p.binUsers--; p.binUsers == 0 {
		p.bin = nil
	}
}

// versionHash returns the hash from a "<version> <sha256>" line.
func versionHash(v string) string {
	f := strings.Fields(v)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// applyListLocked records a successful "runner list" issued at (listSeq,
// listAt) and recomputes Containers, the state (idle/running) and LastBusy.
// It reports whether Containers, Reported or the state changed.
func (p *Pool) applyListLocked(w *worker, sts []runner.Status, listSeq uint64, listAt, now time.Time) bool {
	if listSeq < w.listSeq {
		return false // an older list than the one we have
	}
	// Hide containers forgotten after this list was issued.
	if len(w.forgotten) > 0 {
		keepF := w.forgotten[:0]
		for _, f := range w.forgotten {
			if f.seq > listSeq {
				keepF = append(keepF, f)
			}
		}
		w.forgotten = keepF
		if len(keepF) > 0 {
			sts = slices.DeleteFunc(sts, func(st runner.Status) bool {
				for _, f := range keepF {
					if f.id == st.ID {
						return true
					}
				}
				return false
			})
		}
	}
	if sts == nil {
		sts = []runner.Status{}
	}
	changed := w.v.Reported == nil || !slices.EqualFunc(w.v.Reported, sts, statusEqual)
	w.v.Reported = sts
	w.v.ListedAt = listAt
	w.listSeq = listSeq

	// Build the new Containers in the spare buffer (Instances copies, so
	// the pool may reuse both).
	cs := w.csSpare[:0]
	for i := range sts {
		if sts[i].State == runner.StateRunning {
			cs = append(cs, sts[i].ID)
		}
	}
	keep := w.starts[:0]
	for _, s := range w.starts {
		if s.doneSeq != 0 && s.doneSeq < listSeq {
			continue // started before the list was issued: the list is authoritative
		}
		keep = append(keep, s)
		if s.seq > listSeq || findStatus(sts, s.id) < 0 {
			if !slices.Contains(cs, s.id) {
				cs = append(cs, s.id)
			}
		}
	}
	clear(w.starts[len(keep):])
	w.starts = keep
	if !slices.Equal(cs, w.v.Containers) {
		changed = true
	}
	w.csSpare = w.v.Containers
	w.v.Containers = cs
	if len(w.kills) > 0 {
		w.kills = slices.DeleteFunc(w.kills, func(k killEntry) bool { return !slices.Contains(cs, k.id) })
	}
	prev := w.v.State
	p.updateBusyLocked(w, now)
	return changed || w.v.State != prev
}

func statusEqual(a, b runner.Status) bool {
	return a.ID == b.ID && a.PID == b.PID && a.State == b.State && a.ExitCode == b.ExitCode &&
		a.StartedAt.Equal(b.StartedAt) && a.FinishedAt.Equal(b.FinishedAt)
}

// updateBusyLocked sets idle/running from Containers and LastBusy.
func (p *Pool) updateBusyLocked(w *worker, now time.Time) {
	if len(w.v.Containers) > 0 {
		w.v.LastBusy = now
	}
	switch w.v.State {
	case StateIdle, StateRunning:
		if len(w.v.Containers) > 0 {
			w.v.State = StateRunning
		} else {
			w.v.State = StateIdle
		}
	}
}

func findStatus(sts []runner.Status, id string) int {
	for i := range sts {
		if sts[i].ID == id {
			return i
		}
	}
	return -1
}

// ---------------------------------------------------------------------------
// containers

// StartContainer starts a container on an idle or running instance whose
// idle behaviour is run. The start itself is asynchronous; a failure is
// reported by TakeStartFailures.
func (p *Pool) StartContainer(id cloud.InstanceID, spec runner.Spec) error {
	if err := runner.ValidateSpec(&spec); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.workers[id]
	if w == nil {
		return ErrNotFound
	}
	if (w.v.State != StateIdle && w.v.State != StateRunning) || w.v.IdleBehavior != IdleRun {
		return ErrNotReady
	}
	for _, s := range w.starts {
		if s.id == spec.ID {
			return nil // already starting
		}
	}
	now := p.clk.Now()
	w.starts = append(w.starts, startEntry{id: spec.ID, seq: p.nextSeqLocked()})
	if !slices.Contains(w.v.Containers, spec.ID) {
		w.v.Containers = append(w.v.Containers, spec.ID)
	}
	w.v.State = StateRunning
	w.v.LastContainer = spec.ID
	w.v.LastBusy = now
	p.notifyLocked()
	// Starts go out in "runner batch" calls, one sender per instance: a
	// start queued while a batch is in flight joins the next one.
	w.startQ = append(w.startQ, spec)
	if w.startBusy {
		return nil
	}
	w.startBusy = true
	if !p.goLocked(func() { p.runStartBatches(w) }) {
		w.startBusy = false
		return errStopped
	}
	return nil
}

// runStartBatches sends w's queued starts in "runner batch" calls until
// none are left, then probes w soon so that short containers are noticed.
func (p *Pool) runStartBatches(w *worker) {
	for {
		p.mu.Lock()
		n := min(len(w.startQ), runner.MaxBatch)
		if n == 0 || p.canceled() {
			w.startBusy = false
			p.mu.Unlock()
			return
		}
		specs := slices.Clone(w.startQ[:n])
		w.startQ = slices.Delete(w.startQ, 0, n)
		p.mu.Unlock()

		var errs []error
		exec, err := p.executor(w)
		outcome := startNeverSent
		if err == nil {
			client := runner.Client{Exec: exec, Path: p.s.runnerPath}
			errs, err = client.StartMany(p.ctx, specs)
			outcome = classifyBatchErr(err)
		}
		p.mu.Lock()
		for i := range specs {
			if err != nil {
				p.startDoneLocked(w, specs[i].ID, err, outcome)
			} else {
				p.startDoneLocked(w, specs[i].ID, errs[i], startRefused)
			}
		}
		w.nextProbe = time.Time{}
		p.notifyLocked()
		p.mu.Unlock()
	}
}

// startOutcome says what a failed start call tells about the container.
type startOutcome int

const (
	// startRefused: the runner answered that it did not start it.
	startRefused startOutcome = iota
	// startNeverSent: no connection, the runner never saw the request.
	startNeverSent
	// startUnknown: the call failed on the way (timeout, broken
	// connection); the runner may or may not have started it.
	startUnknown
)

// classifyBatchErr says what the error of a whole "runner batch" call of
// starts means for the containers in it.
func classifyBatchErr(err error) startOutcome {
	var ee *runner.ExitError
	switch {
	case errors.Is(err, runner.ErrNotSent):
		return startNeverSent
	case errors.As(err, &ee) && (ee.Code == 2 || ee.Code == 126 || ee.Code == 127):
		// A batch exits 2 only when it could not read its requests,
		// 126/127 when the runner could not be run: nothing started.
		return startRefused
	}
	// Failed on the way, or a batch that ended part way through: some
	// may have started.
	return startUnknown
}

// startDoneLocked records the end of a start call. err == nil means it
// started; otherwise outcome says what the error means.
func (p *Pool) startDoneLocked(w *worker, cid string, err error, outcome startOutcome) {
	i := slices.IndexFunc(w.starts, func(s startEntry) bool { return s.id == cid && s.doneSeq == 0 })
	if i < 0 || w.removed {
		return
	}
	p.stats.Starts++
	if err == nil {
		w.starts[i].doneSeq = p.nextSeqLocked()
		return
	}
	if outcome == startUnknown {
		// Only the runner's listing can tell: the first list issued after
		// now shows it running (started) or not (the scheduler then
		// returns it to the queue without counting an attempt). Reporting
		// a failure here would count an attempt for a start that may have
		// happened, and a later listing would then adopt it as a second.
		w.starts[i].doneSeq = p.nextSeqLocked()
		p.log.Warn("container start outcome unknown; the next runner list decides",
			"instance", string(w.v.ID), "container", cid, "error", err.Error())
		return
	}
	startSeq := w.starts[i].seq
	if j := findStatus(w.v.Reported, cid); j >= 0 && w.listSeq > startSeq && w.v.Reported[j].State == runner.StateRunning {
		// A list issued after the start shows the container running: it
		// started even though the call reported an error.
		w.starts[i].doneSeq = p.nextSeqLocked()
		return
	}
	p.stats.StartFailures++
	w.starts = slices.Delete(w.starts, i, i+1)
	if j := findStatus(w.v.Reported, cid); j < 0 || w.v.Reported[j].State != runner.StateRunning {
		w.v.Containers = slices.DeleteFunc(w.v.Containers, func(s string) bool { return s == cid })
	}
	p.updateBusyLocked(w, p.clk.Now())
	p.startFailures = append(p.startFailures, StartFailure{ContainerID: cid, InstanceID: w.v.ID, Err: err, NeverSent: outcome == startNeverSent})
	p.log.Warn("container start failed", "instance", string(w.v.ID), "container", cid, "error", err.Error())
	p.notifyLocked()
}

// TakeStartFailures returns and clears the start failures recorded since
// the last call.
func (p *Pool) TakeStartFailures() []StartFailure {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.startFailures
	p.startFailures = nil
	return f
}

// KillContainer sends TERM to a container now and, if a list issued after
// the TERM still reports it running once kill_grace has passed, KILL (once).
// Calls while a kill is pending do nothing. It reports whether it sent a
// new TERM.
func (p *Pool) KillContainer(id cloud.InstanceID, containerID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.workers[id]
	if w == nil || w.v.State == StateShutdown || !runner.ValidID(containerID) {
		return false
	}
	if slices.ContainsFunc(w.kills, func(k killEntry) bool { return k.id == containerID }) {
		return false // already being killed
	}
	if i := findStatus(w.v.Reported, containerID); i >= 0 && w.v.Reported[i].State == runner.StateExited &&
		!slices.Contains(w.v.Containers, containerID) {
		return false // already exited
	}
	now := p.clk.Now()
	w.kills = append(w.kills, killEntry{id: containerID, termAt: now, termSeq: p.nextSeqLocked()})
	p.sendSignalLocked(w, containerID, runner.SignalTerm)
	return true
}

// checkKillsLocked sends KILL to containers still reported running by a
// list issued after their TERM, once kill_grace has passed.
func (p *Pool) checkKillsLocked(w *worker, now time.Time) {
	for i := range w.kills {
		k := &w.kills[i]
		if k.killSent || now.Sub(k.termAt) < p.s.killGrace || w.listSeq < k.termSeq {
			continue
		}
		if j := findStatus(w.v.Reported, k.id); j < 0 || w.v.Reported[j].State != runner.StateRunning {
			continue
		}
		k.killSent = true
		p.sendSignalLocked(w, k.id, runner.SignalKill)
	}
}

func (p *Pool) sendSignalLocked(w *worker, cid, sig string) {
	p.stats.Kills++
	p.log.Info("killing container", "instance", string(w.v.ID), "container", cid, "signal", sig)
	p.goLocked(func() {
		exec, err := p.executor(w)
		if err == nil {
			client := runner.Client{Exec: exec, Path: p.s.runnerPath}
			err = client.Kill(p.ctx, cid, sig)
		}
		if err != nil && !p.canceled() {
			p.log.Warn("runner kill failed", "instance", string(w.v.ID), "container", cid, "signal", sig, "error", err.Error())
		}
	})
}

// ForgetContainer asks the runner to forget an exited container; once done
// it is dropped from Reported. Calls while one is in flight do nothing.
func (p *Pool) ForgetContainer(id cloud.InstanceID, containerID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.workers[id]
	if w == nil || !runner.ValidID(containerID) || slices.Contains(w.forgetting, containerID) {
		return
	}
	if w.v.State == StateShutdown {
		// Its runner goes away with it: just stop reporting the container.
		w.forgotten = append(w.forgotten, forgotEntry{id: containerID, seq: p.nextSeqLocked()})
		if i := findStatus(w.v.Reported, containerID); i >= 0 {
			w.v.Reported = slices.Delete(w.v.Reported, i, i+1)
			p.notifyLocked()
		}
		return
	}
	w.forgetting = append(w.forgetting, containerID)
	// Like starts, forgets go out in "runner batch" calls, one sender per
	// instance.
	w.forgetQ = append(w.forgetQ, containerID)
	if w.forgetBusy {
		return
	}
	w.forgetBusy = true
	if !p.goLocked(func() { p.runForgetBatches(w) }) {
		w.forgetBusy = false
		w.forgetQ = w.forgetQ[:len(w.forgetQ)-1]
		w.forgetting = w.forgetting[:len(w.forgetting)-1]
	}
}

// runForgetBatches sends w's queued forgets (after fetching the logs of
// those containers when OnLogs is set) in "runner batch" calls until none
// are left.
func (p *Pool) runForgetBatches(w *worker) {
	for {
		p.mu.Lock()
		n := min(len(w.forgetQ), runner.MaxBatch)
		if n == 0 || p.canceled() {
			w.forgetBusy = false
			for _, id := range w.forgetQ {
				w.forgetting = slices.DeleteFunc(w.forgetting, func(s string) bool { return s == id })
			}
			w.forgetQ = nil
			p.mu.Unlock()
			return
		}
		ids := slices.Clone(w.forgetQ[:n])
		w.forgetQ = slices.Delete(w.forgetQ, 0, n)
		p.mu.Unlock()

		errs := make([]error, len(ids))
		exec, err := p.executor(w)
		client := runner.Client{Exec: exec, Path: p.s.runnerPath}
		if err == nil && p.opts.OnLogs != nil {
			reqs := make([]runner.Request, len(ids))
			for i, id := range ids {
				reqs[i] = runner.Request{Verb: "logs", ID: id, Tail: LogTailLines}
			}
			var replies []runner.Reply
			if replies, err = client.Batch(p.ctx, reqs); err == nil {
				// Concurrently, so that a store batching its writes
				// (bbolt's Batch) commits them together.
				var wg sync.WaitGroup
				for i := range replies {
					if errs[i] = replies[i].Err("logs"); errs[i] == nil {
						wg.Go(func() { p.opts.OnLogs(ids[i], replies[i].Stdout) })
					}
				}
				wg.Wait()
			}
		}
		if err == nil {
			var reqs []runner.Request
			var idx []int
			for i, id := range ids {
				if errs[i] == nil {
					reqs = append(reqs, runner.Request{Verb: "forget", ID: id})
					idx = append(idx, i)
				}
			}
			var replies []runner.Reply
			if replies, err = client.Batch(p.ctx, reqs); err == nil {
				for k := range replies {
					errs[idx[k]] = replies[k].Err("forget")
				}
			}
		}
		p.mu.Lock()
		changed := false
		for i, id := range ids {
			w.forgetting = slices.DeleteFunc(w.forgetting, func(s string) bool { return s == id })
			if w.removed || p.canceled() {
				continue
			}
			e := err
			if e == nil {
				e = errs[i]
			}
			if e != nil {
				p.log.Warn("runner forget failed", "instance", string(w.v.ID), "container", id, "error", e.Error())
				continue
			}
			w.forgotten = append(w.forgotten, forgotEntry{id: id, seq: p.nextSeqLocked()})
			if j := findStatus(w.v.Reported, id); j >= 0 {
				w.v.Reported = slices.Delete(w.v.Reported, j, j+1)
			}
			changed = true
		}
		if changed {
			p.notifyLocked()
		}
		p.mu.Unlock()
	}
}

// LogTailLines is how many lines of an exited container's output are kept
// when the runner forgets it.
const LogTailLines = 1000

// Logs returns a container's output from the runner on its instance (the
// last tail lines when tail > 0). It blocks on the runner call.
func (p *Pool) Logs(ctx context.Context, id cloud.InstanceID, containerID string, tail int) ([]byte, error) {
	p.mu.Lock()
	w := p.workers[id]
	p.mu.Unlock()
	if w == nil {
		return nil, ErrNotFound
	}
	exec, err := p.executor(w)
	if err != nil {
		return nil, err
	}
	client := runner.Client{Exec: exec, Path: p.s.runnerPath}
	return client.Logs(ctx, containerID, tail)
}

// ---------------------------------------------------------------------------
// creates and quota

// Create asks the cloud for a new instance of the named type. nil means the
// create was accepted and runs asynchronously (a pending entry shows in
// Instances until it completes).
func (p *Pool) Create(typeName string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return errStopped
	}
	it, ok := p.types[typeName]
	if !ok {
		return fmt.Errorf("unknown instance type %q", typeName)
	}
	now := p.clk.Now()
	if now.Before(p.pausedUntil) {
		return ErrThrottled
	}
	if now.Before(p.capBlockedAll) {
		return &CapacityBlockedError{Type: "", Until: p.capBlockedAll}
	}
	if until, ok := p.capBlocked[it.ProviderType]; ok && now.Before(until) {
		return &CapacityBlockedError{Type: typeName, Until: until}
	}
	if p.atCapLocked(now) {
		return ErrAtQuota
	}
	if p.s.maxConcurrentCreates > 0 && len(p.pending) >= p.s.maxConcurrentCreates {
		return ErrThrottled
	}
	if !p.cloudBucket.take(now) {
		return ErrThrottled
	}
	var secret [16]byte
	rand.Read(secret[:])
	tags := cloud.Tags{
		cloud.TagOwner:        p.opts.Owner,
		cloud.TagInstanceType: it.Name,
		cloud.TagIdleBehavior: string(IdleRun),
		cloud.TagSecret:       hex.EncodeToString(secret[:]),
	}
	pc := &pendingCreate{view: InstanceView{
		Type:         it.Name,
		ProviderType: it.ProviderType,
		Price:        it.Price,
		State:        StateBooting,
		IdleBehavior: IdleRun,
		AppearedAt:   now,
	}}
	p.pending = append(p.pending, pc)
	p.stats.Creating = len(p.pending)
	p.notifyLocked()
	p.goLocked(func() {
		inst, err := p.is.Create(p.ctx, it, tags)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.createDoneLocked(pc, it, inst, err)
	})
	return nil
}

func (p *Pool) createDoneLocked(pc *pendingCreate, it cloud.InstanceType, inst cloud.Instance, err error) {
	if i := slices.Index(p.pending, pc); i >= 0 {
		p.pending = slices.Delete(p.pending, i, i+1)
	}
	p.stats.Creating = len(p.pending)
	p.notifyLocked()
	if err != nil && p.canceled() {
		return
	}
	now := p.clk.Now()
	p.countOpLocked("create", err)
	if err != nil {
		if cloud.IsQuota(err) {
			// What the provider counts: instances still shutting down
			// hold their quota until they are gone.
			p.quotaEst = p.providerCountLocked()
			p.quotaProbeAt = now.Add(p.s.quotaProbeAfter)
			p.log.Warn("quota error: capping instances", "limit", p.quotaEst, "probe_at", p.quotaProbeAt)
		} else if ce, ok := cloud.AsCapacity(err); ok {
			until := now.Add(p.s.capacityBackoff)
			if ce.InstanceType == "" {
				p.capBlockedAll = until
			} else {
				p.capBlocked[ce.InstanceType] = until
			}
		}
		p.cloudErrLocked(now, "", "create "+it.Name, err)
		return
	}
	id := inst.ID()
	w := p.workers[id]
	if w != nil {
		// Already found by a listing that raced with the create.
		if w.v.State == StateUnknown {
			w.v.State = StateBooting
		}
	} else {
		w = p.addWorkerLocked(inst, it, StateBooting, IdleRun, now)
	}
	w.createdAt = pc.view.AppearedAt
	if p.quotaEst >= 0 {
		if n := p.providerCountLocked(); n > p.quotaEst {
			// The probe above the estimate worked: raise it, and probe
			// again later.
			p.quotaEst = n
			p.quotaProbeAt = now.Add(p.s.quotaProbeAfter)
			if p.s.maxInstances > 0 && n >= p.s.maxInstances {
				p.quotaEst = -1
			}
		}
	}
	p.eventLocked(now, id, EventCreate, fmt.Sprintf("created %s instance (%s)", it.Name, it.ProviderType), slog.LevelInfo)
	p.syncAtLocked(now)
}

// countLocked is the number of instances counting against max_instances:
// every live one the provider has not accepted a destroy for (an instance
// shutting down still runs, and costs, until then), plus creates in
// flight. It is counted, not kept: a destroy can end after a listing
// dropped its instance, and a running count got that wrong. A pass asks a
// few times at most.
func (p *Pool) countLocked() int {
	n := len(p.pending)
	for _, w := range p.list {
		if !w.destroyed {
			n++
		}
	}
	return n
}

// providerCountLocked is the number of instances the provider counts
// against its quota: every live one, shutting down or not, plus creates in
// flight.
func (p *Pool) providerCountLocked() int {
	return len(p.list) + len(p.pending)
}

// quotaLimitLocked is the quota estimate, plus one once the quota probe is
// due; math.MaxInt without an estimate.
func (p *Pool) quotaLimitLocked(now time.Time) int {
	if p.quotaEst < 0 {
		return math.MaxInt
	}
	if !now.Before(p.quotaProbeAt) {
		return p.quotaEst + 1
	}
	return p.quotaEst
}

// limitLocked is the effective instance cap: min(max_instances, quota
// limit).
func (p *Pool) limitLocked(now time.Time) int {
	limit := p.quotaLimitLocked(now)
	if p.s.maxInstances > 0 {
		limit = min(limit, p.s.maxInstances)
	}
	return limit
}

// atCapLocked reports whether no instance may be created now: max_instances
// counts the instances not yet destroyed, the quota estimate those the
// provider still lists.
func (p *Pool) atCapLocked(now time.Time) bool {
	if p.s.maxInstances > 0 && p.countLocked() >= p.s.maxInstances {
		return true
	}
	return p.providerCountLocked() >= p.quotaLimitLocked(now)
}

// Quota returns the effective instance cap (math.MaxInt when unlimited) and
// whether the pool is at it.
func (p *Pool) Quota() (limit int, atQuota bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clk.Now()
	return p.limitLocked(now), p.atCapLocked(now)
}

// ---------------------------------------------------------------------------
// verbs

// Shutdown destroys an idle instance on the scheduler's request. It refuses
// (false) held, non-idle and unknown instances.
func (p *Pool) Shutdown(id cloud.InstanceID, reason string) bool {
	p.mu.Lock()
	w := p.workers[id]
	if w == nil || w.v.IdleBehavior == IdleHold || w.v.State != StateIdle || len(w.starts) > 0 || len(w.v.Containers) > 0 {
		p.mu.Unlock()
		return false
	}
	p.shutdownLocked(w, p.clk.Now(), reason)
	p.mu.Unlock()
	p.flush()
	return true
}

// KillInstance destroys an instance now, whatever its state and idle
// behaviour.
func (p *Pool) KillInstance(id cloud.InstanceID, reason string) (InstanceView, error) {
	p.mu.Lock()
	w := p.workers[id]
	if w == nil {
		p.mu.Unlock()
		return InstanceView{}, ErrNotFound
	}
	if reason == "" {
		reason = "operator request"
	}
	p.shutdownLocked(w, p.clk.Now(), "killed: "+reason)
	v := w.view()
	p.mu.Unlock()
	p.flush()
	return v, nil
}

// SetIdleBehavior sets an instance's idle behaviour (hold, drain, run). It
// takes effect at once; the instance's tags are updated asynchronously (and
// retried until they are).
func (p *Pool) SetIdleBehavior(id cloud.InstanceID, b IdleBehavior) (InstanceView, error) {
	if !ValidIdleBehavior(b) {
		return InstanceView{}, fmt.Errorf("invalid idle behavior %q (run, hold or drain)", b)
	}
	p.mu.Lock()
	w := p.workers[id]
	if w == nil {
		p.mu.Unlock()
		return InstanceView{}, ErrNotFound
	}
	if w.v.IdleBehavior != b {
		now := p.clk.Now()
		old := w.v.IdleBehavior
		w.v.IdleBehavior = b
		p.eventLocked(now, id, EventIdleBehavior, fmt.Sprintf("idle behavior %s -> %s", old, b), slog.LevelInfo)
		p.notifyLocked()
		if w.v.State != StateShutdown {
			w.tagsDirty = true
			if !w.tagsInFlight {
				p.startTagsLocked(w, now)
			}
		}
	}
	v := w.view()
	p.mu.Unlock()
	p.flush()
	return v, nil
}

// ---------------------------------------------------------------------------
// snapshots

// view returns a deep copy of w's view.
func (w *worker) view() InstanceView {
	v := w.v
	v.Containers = slices.Clone(w.v.Containers)
	if v.Containers == nil {
		v.Containers = []string{}
	}
	if w.v.Reported != nil {
		v.Reported = append([]runner.Status{}, w.v.Reported...)
	}
	return v
}

// Instances appends a snapshot of every instance to buf[:0]: by ID, then
// creates in flight (ID ""). Containers and Reported are copies.
func (p *Pool) Instances(buf []InstanceView) []InstanceView {
	p.mu.Lock()
	defer p.mu.Unlock()
	buf = buf[:0]
	nc, nr := 0, 0
	for _, w := range p.list {
		nc += len(w.v.Containers)
		nr += len(w.v.Reported)
	}
	cs := make([]string, nc)
	rs := make([]runner.Status, nr)
	for _, w := range p.list {
		v := w.v
		n := copy(cs, w.v.Containers)
		v.Containers = cs[:n:n]
		cs = cs[n:]
		if w.v.Reported != nil {
			n = copy(rs, w.v.Reported)
			v.Reported = rs[:n:n]
			rs = rs[n:]
		}
		buf = append(buf, v)
	}
	for _, pc := range p.pending {
		v := pc.view
		v.Containers = cs[:0:0]
		buf = append(buf, v)
	}
	return buf
}

// Instance returns a snapshot of one instance.
func (p *Pool) Instance(id cloud.InstanceID) (InstanceView, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.workers[id]
	if w == nil {
		return InstanceView{}, false
	}
	return w.view(), true
}

// Ready reports whether the first listing is done and every instance it
// found has been probed at least once (successfully or not).
func (p *Pool) Ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ready {
		return true
	}
	if !p.synced {
		return false
	}
	for _, w := range p.list {
		if w.initial && !w.probed && w.v.State != StateShutdown {
			return false
		}
	}
	p.ready = true
	return true
}

// Stats returns a copy of the pool's counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.CloudOps = make(map[string]map[string]int, len(p.stats.CloudOps))
	for op, m := range p.stats.CloudOps {
		s.CloudOps[op] = make(map[string]int, len(m))
		for k, n := range m {
			s.CloudOps[op][k] = n
		}
	}
	s.ProbeLatency = p.stats.ProbeLatency.clone()
	s.BootTime = p.stats.BootTime.clone()
	now := p.clk.Now()
	s.QuotaLimit = p.limitLocked(now)
	s.AtQuota = p.atCapLocked(now)
	s.PausedUntil = p.pausedUntil
	return s
}

// ---------------------------------------------------------------------------
// token bucket

// bucket is a token bucket on the injected clock. rate <= 0 = unlimited.
type bucket struct {
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func newBucket(rate float64, now time.Time) bucket {
	b := bucket{rate: rate, burst: max(1, rate), last: now}
	b.tokens = b.burst
	return b
}

func (b *bucket) take(now time.Time) bool {
	if b.rate <= 0 {
		return true
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.burst, b.tokens+d.Seconds()*b.rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
