// Package fake is an in-memory, fault-injecting cloud driver (docs/design.md §8)
// with an in-memory runner on every instance (docs/design.md §7.3).
//
// It is meant for the engine's scenario tests and the chaos soak. All time
// is read from the injected clock on every call, so with a *clock.Fake the
// driver is fully deterministic; all random faults come from PCG sources
// seeded by Options.Seed (one independent stream per kind of fault, so
// turning one knob does not reshuffle the others). The driver starts no
// goroutines; all state is guarded by one mutex.
//
// Stop is a no-op: the "cloud" outlives any one dispatcher, so a test can
// stop an engine and start a new one against the same Driver to simulate a
// dispatcher restart.
package fake

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/runner"
)

// Options configure a Driver. Rates are fractions in [0,1].
type Options struct {
	Clock clock.Clock // required (clock.Real{} or *clock.Fake)
	Seed  int64       // seeds every random fault (deterministic)

	CreateErrorRate  float64 // fraction of Create calls failing with a plain error (ErrInjected)
	DestroyErrorRate float64 // fraction of Destroy calls failing with a plain error (ErrInjected)
	// Quota is the max number of live instances; a Create beyond it returns
	// *cloud.QuotaError. 0 = unlimited.
	Quota int
	// CapacityErrorTypes are provider types whose Create returns
	// *cloud.CapacityError{InstanceType: t}.
	CapacityErrorTypes []string
	// ProviderCapacityError makes every Create return
	// *cloud.CapacityError{InstanceType: ""}.
	ProviderCapacityError bool
	// RateLimitRate is the fraction of cloud calls (Create, Destroy,
	// Instances, SetTags) that start a rate-limit period. While one is in
	// force every cloud call returns *cloud.RateLimitError.
	RateLimitRate float64
	// RateLimitFor is how long a rate-limit period lasts (RetryAfter = now +
	// RateLimitFor). Default 10s.
	RateLimitFor time.Duration
	// ExitNotices: the executors keep "runner watch" open (watch.go)
	// even with a fake clock, where AnnounceExits is when the runners
	// notice their exits. With clock.Real they always do.
	ExitNotices bool
	// BootDelay: executor calls fail (connection refused) until
	// created+BootDelay.
	BootDelay time.Duration
	// BrokenRate is the fraction of created instances whose executor
	// always fails.
	BrokenRate float64
	// RunnerCrashRate is the fraction of started containers that later
	// vanish from "runner list": after half their runtime, or after 1s for
	// containers that run until killed.
	RunnerCrashRate float64
	// VanishRate: on every successful Instances() call, each live instance
	// disappears with this probability (as if the provider terminated it).
	VanishRate float64
	// VanishFraction is the fraction of created instances that disappear
	// once, at the first listing after a moment drawn uniformly from the
	// first VanishWithin (default 30m) of their life. The fraction is
	// exact, not drawn: at 0.05, every 20th instance created; one
	// destroyed before its moment passes its turn to the next created.
	VanishFraction float64
	VanishWithin   time.Duration
	// LostReplyRate is the fraction of runner calls that run on the
	// instance but whose reply is lost (the connection drops before the
	// exit status arrives), so the caller cannot tell whether they ran.
	LostReplyRate float64
	// LostRequestRate is the fraction of runner calls whose connection
	// drops before they run, with the same error as a lost reply.
	LostRequestRate float64
	// SpotInterruptRate: on every successful Instances() call, each live
	// instance of a preemptible type is interrupted with this probability
	// (see Interrupt).
	SpotInterruptRate float64
	// RunnerHash is the hash "runner version" reports ("fake-runner
	// <RunnerHash>") for a runner path that was not installed through the
	// executor. Default "0". After runner.InstallLine(path) ran with the
	// binary on stdin, "<path> runner version" reports the sha256 of what
	// was installed, like a real runner would.
	RunnerHash string
}

// Errors the driver injects. Executor failures wrap ErrUnreachable.
var (
	// ErrInjected is wrapped by the plain errors Create and Destroy return
	// under CreateErrorRate and DestroyErrorRate.
	ErrInjected = errors.New("fake: injected failure")
	// ErrNotFound is wrapped by errors about an instance the driver does not
	// know, or no longer has (SetTags on a destroyed instance, Executor of an
	// unknown id).
	ErrNotFound = errors.New("instance not found")
	// ErrUnreachable is wrapped by every executor error that is not an
	// *runner.ExitError: booting, broken, destroyed or vanished instances.
	ErrUnreachable = errors.New("unreachable")
)

// Stats counts what the driver was asked to do.
type Stats struct {
	Creates        int // Create calls, whatever the outcome
	CreateErrors   int // Create calls failing with quota, capacity or injected errors (not rate limits)
	QuotaErrors    int // of those, quota errors
	CapacityErrors int // of those, capacity errors (per type or provider-wide)
	Destroys       int // Destroy calls, whatever the outcome
	DestroyErrors  int // Destroy calls failing with an injected error (not rate limits)
	Lists          int // Instances calls, whatever the outcome
	SetTags        int // SetTags calls, whatever the outcome
	RateLimited    int // cloud calls of any kind refused with *cloud.RateLimitError
	Starts         int // "runner start" commands accepted
	Kills          int // "runner kill" commands accepted

	Created      int // instances created
	Destroyed    int // instances destroyed by a successful Destroy
	Vanished     int // instances that vanished (VanishRate or Vanish)
	Interrupted  int // instances interrupted (SpotInterruptRate or Interrupt)
	Installs     int // runner install lines executed
	Crashed      int // containers that vanished from a runner's list (RunnerCrashRate or CrashRunner)
	LostReplies  int // runner calls that ran but whose reply was lost (LostReplyRate)
	LostRequests int // runner calls lost before they ran (LostRequestRate)
}

// rng streams, one per kind of fault.
const (
	streamCreate = iota + 1
	streamDestroy
	streamRateLimit
	streamBroken
	streamCrash
	streamVanish
	streamLost // lost requests and replies
	streamSpot // spot interruptions (spot.go)
)

// Driver is an in-memory cloud.InstanceSet. Use New.
type Driver struct {
	mu    sync.Mutex
	clock clock.Clock

	faults         Faults
	rateLimitFor   time.Duration
	vanishFraction float64
	vanishWithin   time.Duration
	vanishDue      float64 // VanishFraction owed so far; an instance vanishes at each whole one
	loseNextStart  Loss
	runnerHash     string
	exitNotices    bool // executors are WatchExecutors (watch.go)

	rngCreate, rngDestroy, rngRateLimit, rngBroken, rngCrash, rngVanish, rngLost *rand.Rand
	rngSpot                                                                      *rand.Rand

	seq       int
	pid       int
	instances map[cloud.InstanceID]*instState
	starts    map[string][]string // container id -> "<instance> <time>" of each start
	stats     Stats
	installs  installHashes // install.go
}

var _ cloud.InstanceSet = (*Driver)(nil)

type instState struct {
	seq          int
	id           cloud.InstanceID
	providerType string
	address      string
	tags         cloud.Tags
	created      time.Time
	readyAt      time.Time
	broken       bool
	destroyed    bool
	vanished     bool
	vanishAt     time.Time // zero: never (VanishFraction)
	preemptible  bool      // of a preemptible type (spot.go)
	interrupted  string    // why the provider takes it back; "" = not (spot.go)
	containers   map[string]*ctr
	installed    map[string]string // runner path -> sha256 hex of installed bytes
	runnerGone   bool              // the runner binary was deleted (runnerfile.go)
	installFails string            // installs exit 1 with this message (runnerfile.go)
	watchers     []*memWatch       // "runner watch" sessions open on it (watch.go)
	epoch        int64             // the highest leader epoch its runner has seen (runner.CheckEpoch)
}

func (s *instState) live() bool { return !s.destroyed && !s.vanished }

// New returns a Driver. It panics if opts.Clock is nil.
func New(opts Options) *Driver {
	if opts.Clock == nil {
		panic("fake: Options.Clock is required")
	}
	if opts.RateLimitFor <= 0 {
		opts.RateLimitFor = 10 * time.Second
	}
	if opts.VanishWithin <= 0 {
		opts.VanishWithin = 30 * time.Minute
	}
	if opts.RunnerHash == "" {
		opts.RunnerHash = "0"
	}
	seed := uint64(opts.Seed)
	stream := func(k uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, k)) }
	_, realClock := opts.Clock.(clock.Real)
	d := &Driver{
		clock:       opts.Clock,
		exitNotices: opts.ExitNotices || realClock,
		faults: Faults{
			Quota:                 opts.Quota,
			CapacityErrorTypes:    map[string]bool{},
			ProviderCapacityError: opts.ProviderCapacityError,
			CreateErrorRate:       opts.CreateErrorRate,
			DestroyErrorRate:      opts.DestroyErrorRate,
			RateLimitRate:         opts.RateLimitRate,
			BootDelay:             opts.BootDelay,
			BrokenRate:            opts.BrokenRate,
			RunnerCrashRate:       opts.RunnerCrashRate,
			VanishRate:            opts.VanishRate,
			LostReplyRate:         opts.LostReplyRate,
			LostRequestRate:       opts.LostRequestRate,
			SpotInterruptRate:     opts.SpotInterruptRate,
		},
		rateLimitFor:   opts.RateLimitFor,
		vanishFraction: opts.VanishFraction,
		vanishWithin:   opts.VanishWithin,
		runnerHash:     opts.RunnerHash,
		rngCreate:      stream(streamCreate),
		rngDestroy:     stream(streamDestroy),
		rngRateLimit:   stream(streamRateLimit),
		rngBroken:      stream(streamBroken),
		rngCrash:       stream(streamCrash),
		rngVanish:      stream(streamVanish),
		rngLost:        stream(streamLost),
		rngSpot:        stream(streamSpot),
		instances:      map[cloud.InstanceID]*instState{},
		starts:         map[string][]string{},
	}
	for _, t := range opts.CapacityErrorTypes {
		d.faults.CapacityErrorTypes[t] = true
	}
	return d
}

// roll reports whether an event of probability p happens. It draws from r
// only when 0 < p < 1, so a knob at 0 or 1 consumes no randomness.
func roll(r *rand.Rand, p float64) bool {
	switch {
	case p <= 0:
		return false
	case p >= 1:
		return true
	}
	return r.Float64() < p
}

// startCallLocked starts a cloud call, with d.mu held: it counts the call
// in *calls and returns the clock's time, or a *cloud.RateLimitError if a
// rate-limit period is in force or one starts now.
func (d *Driver) startCallLocked(calls *int) (time.Time, error) {
	now := d.clock.Now()
	*calls++
	return now, d.rateLimit(now)
}

// rateLimit is startCallLocked's check.
func (d *Driver) rateLimit(now time.Time) error {
	if now.Before(d.faults.RateLimitedUntil) {
		d.stats.RateLimited++
		return &cloud.RateLimitError{RetryAfter: d.faults.RateLimitedUntil, Err: errors.New("fake: request limit exceeded")}
	}
	if roll(d.rngRateLimit, d.faults.RateLimitRate) {
		d.faults.RateLimitedUntil = now.Add(d.rateLimitFor)
		d.stats.RateLimited++
		return &cloud.RateLimitError{RetryAfter: d.faults.RateLimitedUntil, Err: errors.New("fake: request limit exceeded")}
	}
	return nil
}

func (d *Driver) liveCount() int {
	n := 0
	for _, s := range d.instances {
		if s.live() {
			n++
		}
	}
	return n
}

// sorted returns the instances (all, or only live ones) in creation order.
func (d *Driver) sorted(liveOnly bool) []*instState {
	out := make([]*instState, 0, len(d.instances))
	for _, s := range d.instances {
		if !liveOnly || s.live() {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// Create implements cloud.InstanceSet. Checks, in order: rate limit,
// provider-wide capacity, per-type capacity, quota, injected error.
func (d *Driver) Create(ctx context.Context, it cloud.InstanceType, tags cloud.Tags) (cloud.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	now, err := d.startCallLocked(&d.stats.Creates)
	if err != nil {
		return nil, err
	}
	pt := it.ProviderType
	if pt == "" {
		pt = it.Name
	}
	if d.faults.PermanentError {
		d.stats.CreateErrors++
		return nil, &cloud.PermanentError{Err: errors.New("fake: UnauthorizedOperation: not authorized to create instances")}
	}
	if d.faults.ProviderCapacityError {
		d.stats.CreateErrors++
		d.stats.CapacityErrors++
		return nil, &cloud.CapacityError{Err: errors.New("fake: insufficient capacity")}
	}
	if d.faults.CapacityErrorTypes[pt] {
		d.stats.CreateErrors++
		d.stats.CapacityErrors++
		return nil, &cloud.CapacityError{InstanceType: pt, Err: errors.New("fake: insufficient instance capacity")}
	}
	if d.faults.Quota > 0 && d.liveCount()+d.faults.ForeignInstances >= d.faults.Quota {
		d.stats.CreateErrors++
		d.stats.QuotaErrors++
		return nil, &cloud.QuotaError{Err: fmt.Errorf("fake: instance limit %d reached", d.faults.Quota)}
	}
	if roll(d.rngCreate, d.faults.CreateErrorRate) {
		d.stats.CreateErrors++
		return nil, fmt.Errorf("create %s: %w", pt, ErrInjected)
	}
	d.seq++
	id := cloud.InstanceID(fmt.Sprintf("ct-%04d", d.seq))
	s := &instState{
		seq:          d.seq,
		id:           id,
		providerType: pt,
		address:      string(id) + ":22",
		tags:         tags.Clone(),
		created:      now,
		readyAt:      now.Add(d.faults.BootDelay),
		broken:       roll(d.rngBroken, d.faults.BrokenRate),
		containers:   map[string]*ctr{},
		installed:    map[string]string{},
		preemptible:  it.Preemptible,
	}
	if d.vanishDue += d.vanishFraction; d.vanishDue >= 1 {
		d.vanishDue--
		s.vanishAt = now.Add(time.Duration(d.rngVanish.Int64N(int64(d.vanishWithin))))
	}
	d.instances[id] = s
	d.stats.Created++
	return d.handle(s), nil
}

// Instances implements cloud.InstanceSet: live instances whose tags contain
// every pair in filter, in creation order. Before listing, each live
// instance vanishes with probability VanishRate, and those whose
// VanishFraction moment has come vanish.
func (d *Driver) Instances(ctx context.Context, filter cloud.Tags) ([]cloud.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	now, err := d.startCallLocked(&d.stats.Lists)
	if err != nil {
		return nil, err
	}
	var out []cloud.Instance
	for _, s := range d.sorted(true) {
		if roll(d.rngVanish, d.faults.VanishRate) || (!s.vanishAt.IsZero() && !now.Before(s.vanishAt)) {
			d.vanish(s)
			continue
		}
		d.maybeInterrupt(s)
		if matches(s.tags, filter) {
			out = append(out, d.handle(s))
		}
	}
	return out, nil
}

func matches(tags, filter cloud.Tags) bool {
	for k, v := range filter {
		if tv, ok := tags[k]; !ok || tv != v {
			return false
		}
	}
	return true
}

// Stop implements cloud.InstanceSet. It is a no-op: instances and their
// containers stay, and the Driver remains usable (a restarted dispatcher
// may use it again).
func (d *Driver) Stop() {}

func (d *Driver) vanish(s *instState) {
	if !s.live() {
		return
	}
	s.vanished = true
	s.containers = map[string]*ctr{}
	d.stats.Vanished++
}

func (d *Driver) handle(s *instState) *instance {
	return &instance{d: d, id: s.id, providerType: s.providerType, address: s.address, tags: s.tags.Clone(), interrupted: s.interrupted}
}

// instance is the cloud.Instance handle the driver hands out. Its tags are a
// snapshot taken when it was returned (updated by its own SetTags).
type instance struct {
	d            *Driver
	id           cloud.InstanceID
	providerType string
	address      string
	tags         cloud.Tags // guarded by d.mu
	interrupted  string     // as listed (spot.go)
}

var _ cloud.Instance = (*instance)(nil)

func (i *instance) ID() cloud.InstanceID { return i.id }
func (i *instance) String() string       { return string(i.id) }
func (i *instance) ProviderType() string { return i.providerType }
func (i *instance) Address() string      { return i.address }

func (i *instance) Tags() cloud.Tags {
	i.d.mu.Lock()
	defer i.d.mu.Unlock()
	return i.tags.Clone()
}

// SetTags replaces the instance's tags. It is a cloud call (rate limits
// apply); on a destroyed or vanished instance it returns an error wrapping
// ErrNotFound.
func (i *instance) SetTags(ctx context.Context, tags cloud.Tags) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := i.d
	d.mu.Lock()
	defer d.mu.Unlock()
	_, err := d.startCallLocked(&d.stats.SetTags)
	if err != nil {
		return err
	}
	s := d.instances[i.id]
	if s == nil || !s.live() {
		return fmt.Errorf("set tags on %s: %w", i.id, ErrNotFound)
	}
	s.tags = tags.Clone()
	i.tags = tags.Clone()
	return nil
}

// Destroy removes the instance and its containers. Destroying an instance
// that is already destroyed or vanished returns nil.
func (i *instance) Destroy(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := i.d
	d.mu.Lock()
	defer d.mu.Unlock()
	_, err := d.startCallLocked(&d.stats.Destroys)
	if err != nil {
		return err
	}
	s := d.instances[i.id]
	if s == nil {
		return fmt.Errorf("destroy %s: %w", i.id, ErrNotFound)
	}
	if !s.live() {
		return nil
	}
	if roll(d.rngDestroy, d.faults.DestroyErrorRate) {
		d.stats.DestroyErrors++
		return fmt.Errorf("destroy %s: %w", i.id, ErrInjected)
	}
	s.destroyed = true
	s.containers = map[string]*ctr{}
	d.stats.Destroyed++
	if !s.vanishAt.IsZero() {
		d.vanishDue++ // it never got to vanish: the next one created will
	}
	return nil
}

// Executor returns the in-memory executor of inst (looked up by id, so any
// handle for the instance works). It fails only if the driver never created
// an instance with that id; executing on a destroyed or vanished instance
// fails at Execute time.
func (d *Driver) Executor(inst cloud.Instance) (runner.Executor, error) {
	if inst == nil {
		return nil, fmt.Errorf("executor: nil instance: %w", ErrNotFound)
	}
	return d.ExecutorByID(inst.ID())
}

// ExecutorByID is Executor for an instance id.
func (d *Driver) ExecutorByID(id cloud.InstanceID) (runner.Executor, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.instances[id] == nil {
		return nil, fmt.Errorf("executor for %s: %w", id, ErrNotFound)
	}
	if d.exitNotices {
		return &watchExecutor{executor{d: d, id: id}}, nil
	}
	return &executor{d: d, id: id}, nil
}

// Instance returns a handle for a live instance.
func (d *Driver) Instance(id cloud.InstanceID) (cloud.Instance, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.instances[id]
	if s == nil || !s.live() {
		return nil, false
	}
	return d.handle(s), true
}

// --- knobs ---

// Faults are the knobs a test may turn while the driver runs. They start
// as the Options of the same names.
type Faults struct {
	Quota int // max live instances, foreign ones included; 0 = unlimited
	// CapacityErrorTypes are provider types whose Create returns
	// *cloud.CapacityError{InstanceType: t} while set to true.
	CapacityErrorTypes    map[string]bool
	ProviderCapacityError bool
	// RateLimitedUntil makes every cloud call fail with a RateLimitError
	// (RetryAfter this time) until the clock reaches it; zero: none.
	// RateLimitRate sets it too.
	RateLimitedUntil time.Time
	RateLimitRate    float64
	CreateErrorRate  float64
	DestroyErrorRate float64
	BootDelay        time.Duration // for instances created from now on
	BrokenRate       float64       // for instances created from now on
	RunnerCrashRate  float64       // for containers started from now on
	VanishRate       float64
	LostReplyRate    float64
	LostRequestRate  float64
	// SpotInterruptRate: on every successful Instances() call, each live
	// instance of a preemptible type is interrupted with this probability
	// (spot.go).
	SpotInterruptRate float64
	// ForeignInstances are held by other users of the same account: they
	// count against Quota and no listing shows them.
	ForeignInstances int

	// PermanentError makes every Create fail with a *cloud.PermanentError
	// (say, missing permissions).
	PermanentError bool
}

// Configure changes the driver's faults: change runs with the driver
// locked, on the faults in force.
func (d *Driver) Configure(change func(*Faults)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	change(&d.faults)
}

// Loss is what LoseNextStart loses.
type Loss int

const (
	LoseNone    Loss = iota
	LoseRequest      // the call never runs
	LoseReply        // the call runs; its reply is lost
)

// LoseNextStart makes the next runner call that starts containers (a
// start, or a batch holding one) on any instance fail with a lost
// connection, before (LoseRequest) or after (LoseReply) it runs.
func (d *Driver) LoseNextStart(l Loss) {
	d.mu.Lock()
	d.loseNextStart = l
	d.mu.Unlock()
}

// Vanish makes a live instance disappear as if the provider terminated it:
// it is no longer listed, its containers are gone and its executor fails.
func (d *Driver) Vanish(id cloud.InstanceID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.instances[id]; s != nil {
		d.vanish(s)
	}
}

// Break makes the instance's executor fail on every call.
func (d *Driver) Break(id cloud.InstanceID) { d.setBroken(id, true) }

// Unbreak undoes Break (or a BrokenRate decision).
func (d *Driver) Unbreak(id cloud.InstanceID) { d.setBroken(id, false) }

func (d *Driver) setBroken(id cloud.InstanceID, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.instances[id]; s != nil {
		s.broken = on
	}
}

// CrashRunner makes every container on the instance vanish from its
// runner's list, as if the runner lost all its state.
func (d *Driver) CrashRunner(id cloud.InstanceID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.instances[id]; s != nil {
		d.stats.Crashed += len(s.containers)
		s.containers = map[string]*ctr{}
	}
}

// CrashContainer kills a running container together with its
// supervisor, so that nothing records its exit: its runner lists it as
// exited with code -1, no finish time, and lost (runner.LostKilled).
func (d *Driver) CrashContainer(id cloud.InstanceID, containerID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.instances[id]
	if s == nil {
		return
	}
	now := d.clock.Now()
	if c := s.containers[containerID]; c != nil {
		if st, gone := c.status(now); !gone && st.State == runner.StateRunning {
			c.killed, c.killedAt, c.killCode, c.unrecorded = true, now, -1, true
		}
	}
}

// SignalContainer sends sig ("TERM" or "KILL") to a running container from
// outside the runner, as a user's kill(1) of its pid: the runner reports
// it exited by that signal. A no-op for an unknown or exited container.
func (d *Driver) SignalContainer(id cloud.InstanceID, containerID, sig string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.instances[id]
	if s == nil || !s.live() {
		return
	}
	now := d.clock.Now()
	if c := s.containers[containerID]; c != nil {
		if st, gone := c.status(now); !gone && st.State == runner.StateRunning {
			c.signal(now, sig)
		}
	}
	d.kickWatchersLocked(s)
}

// --- observation ---

// Stats returns a copy of the counters.
func (d *Driver) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Live returns the ids of instances neither destroyed nor vanished, in
// creation order (which is id order up to ct-9999).
func (d *Driver) Live() []cloud.InstanceID {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []cloud.InstanceID
	for _, s := range d.sorted(true) {
		out = append(out, s.id)
	}
	return out
}

// StartCount returns how many times "runner start" was accepted for a
// container id, across all instances.
func (d *Driver) StartCount(containerID string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.starts[containerID])
}

// Starts returns where and when each accepted start of a container ran,
// as "<instance> <clock time>" lines: what a test prints to explain a
// count.
func (d *Driver) Starts(containerID string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.starts[containerID])
}

// RunningOn returns the ids of the containers running on an instance now,
// sorted.
func (d *Driver) RunningOn(id cloud.InstanceID) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.instances[id]
	if s == nil || !s.live() {
		return nil
	}
	var out []string
	for _, st := range d.list(s, d.clock.Now()) {
		if st.State == runner.StateRunning {
			out = append(out, st.ID)
		}
	}
	return out
}

// RunningAnywhere returns, for every container id running on some live
// instance, the instances it runs on. A test can check that no container
// runs twice at once.
func (d *Driver) RunningAnywhere() map[string][]cloud.InstanceID {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock.Now()
	out := map[string][]cloud.InstanceID{}
	for _, s := range d.sorted(true) {
		for _, st := range d.list(s, now) {
			if st.State == runner.StateRunning {
				out[st.ID] = append(out[st.ID], s.id)
			}
		}
	}
	return out
}

// Containers returns what "runner list" would report on the instance now
// (nil for an unknown, destroyed or vanished instance).
func (d *Driver) Containers(id cloud.InstanceID) []runner.Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.instances[id]
	if s == nil || !s.live() {
		return nil
	}
	return d.list(s, d.clock.Now())
}
