package scheduler

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// stubPool is a Pool whose answers a test sets: its instances, whether they
// have all been probed, and what Create says. It records the creates and
// starts asked of it.
type stubPool struct {
	views     []worker.InstanceView
	probed    bool
	unlisted  bool  // no cloud listing has completed yet
	createErr error // nil: every create succeeds
	// bootFailing: types whose instances keep failing to boot, and why.
	bootFailing map[string]string
	quota       int
	created     []string
	started     []string
	shutdowns   []cloud.InstanceID
	// failures are the start failures the next TakeStartFailures takes.
	failures []worker.StartFailure
	// afterSnapshot, if set, runs after Instances has copied the views: a
	// listing that completes just after a pass's snapshot.
	afterSnapshot func()
	gen           uint64
}

func (p *stubPool) Instances(buf []worker.InstanceView) []worker.InstanceView {
	buf = buf[:0]
	for _, v := range p.views {
		v.Containers = slices.Clone(v.Containers)
		v.Reported = slices.Clone(v.Reported)
		buf = append(buf, v)
	}
	if p.afterSnapshot != nil {
		p.afterSnapshot()
	}
	return buf
}

// Generation is new at every call: the tests write views directly, so
// Quiet always compares them.
func (p *stubPool) Generation() uint64 {
	p.gen++
	return p.gen
}
func (p *stubPool) Ready() bool  { return p.probed }
func (p *stubPool) Listed() bool { return !p.unlisted }
func (p *stubPool) Create(typeName string) error {
	if p.createErr != nil {
		return p.createErr
	}
	p.created = append(p.created, typeName)
	return nil
}
func (p *stubPool) CreateRefusal(string) error { return p.createErr }
func (p *stubPool) StartContainer(_ cloud.InstanceID, spec runner.Spec) error {
	p.started = append(p.started, spec.ID)
	return nil
}
func (p *stubPool) KillContainer(cloud.InstanceID, string) bool { return false }
func (p *stubPool) ForgetContainer(cloud.InstanceID, string)    {}
func (p *stubPool) TakeStartFailures() []worker.StartFailure {
	f := p.failures
	p.failures = nil
	return f
}
func (p *stubPool) BootFailing(typeName string) string { return p.bootFailing[typeName] }
func (p *stubPool) Shutdown(id cloud.InstanceID, _ string) bool {
	p.shutdowns = append(p.shutdowns, id)
	return true
}
func (p *stubPool) Quota() (int, bool) {
	return p.quota, errors.Is(p.createErr, worker.ErrAtQuota)
}

// pendingEnv is one row's world: a real queue on a fake clock, the stub
// pool, and the ids of the containers submitted, in submission order.
type pendingEnv struct {
	t     *testing.T
	clk   *clock.Fake
	cfg   *config.Config
	q     *queue.Queue
	pool  *stubPool
	ids   []string
	sched *Scheduler
}

// lock locks container i to the cheapest type now, as an earlier pass would.
func (e *pendingEnv) lock(i int) {
	e.t.Helper()
	err := e.q.Pass(func(tx *queue.Tx) {
		if err := tx.Lock(tx.Get(e.ids[i]), benchTypes[0].Name); err != nil {
			e.t.Fatal(err)
		}
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// instance is a small instance in the given state, listed by its runner now.
func (e *pendingEnv) instance(id cloud.InstanceID, state worker.State) worker.InstanceView {
	typ := benchTypes[0]
	return worker.InstanceView{
		Instance: view.Instance{
			ID:           id,
			Type:         typ.Name,
			ProviderType: typ.ProviderType,
			Price:        typ.Price,
			State:        state,
			IdleBehavior: worker.IdleRun,
		},
		ListedAt: e.clk.Now(),
	}
}

// TestPendingReasons runs one pass per row against a stub pool and checks
// the state and pending reason (code and text) the first (or check-th)
// container is left with: one row for every reason the scheduler gives.
func TestPendingReasons(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	small := queue.Constraints{VCPUs: 1, RAM: 1 << 30} // fits benchTypes' small only
	zero := 0
	cases := []struct {
		name      string
		n         int // containers to submit (default 1), all of shape small
		spec      func(*queue.Spec)
		setup     func(e *pendingEnv) // after New, before the pass
		check     int                 // index of the container to check
		wantState queue.State
		wantCode  queue.ReasonCode
		wantText  string
		// wantTextOf, when set, gives wantText once the row is set up
		// (for texts naming a container id).
		wantTextOf func(e *pendingEnv) string
		after      func(e *pendingEnv)
	}{
		{
			name:      "instances not all probed since start-up",
			setup:     func(e *pendingEnv) { e.pool.probed = false },
			wantState: queue.Queued, wantCode: queue.ReasonStartup,
			wantText: "waiting for instances to be probed after start-up",
		},
		{
			name: "start-up wait over though not all probed",
			setup: func(e *pendingEnv) {
				e.pool.probed = false
				e.clk.Advance(e.cfg.Dispatcher.StaleLockTimeout)
			},
			wantState: queue.Locked, wantCode: queue.ReasonBooting,
			wantText: "waiting for an instance to boot",
		},
		{
			name: "held, and unlocked",
			setup: func(e *pendingEnv) {
				e.lock(0)
				if _, err := e.q.Hold(e.ids[0], "test", ""); err != nil {
					e.t.Fatal(err)
				}
			},
			wantState: queue.Queued, wantCode: queue.ReasonHeld, wantText: "held",
		},
		{
			name:      "priority 0",
			spec:      func(s *queue.Spec) { s.Priority = &zero },
			wantState: queue.Queued, wantCode: queue.ReasonPriorityZero,
			wantText: "priority 0 (not scheduled)",
		},
		{
			name: "scheduler paused",
			setup: func(e *pendingEnv) {
				if err := e.q.SetPaused(true, "test", ""); err != nil {
					e.t.Fatal(err)
				}
			},
			wantState: queue.Queued, wantCode: queue.ReasonPaused, wantText: "scheduler paused",
		},
		{
			name: "previous attempt still on a runner",
			setup: func(e *pendingEnv) {
				// Started on i-1, then requeued; i-1's runner still
				// lists the exited attempt. i-1 has room, so only the
				// old attempt keeps the container from starting there.
				err := e.q.Pass(func(tx *queue.Tx) {
					c := tx.Get(e.ids[0])
					if err := tx.Lock(c, benchTypes[0].Name); err != nil {
						e.t.Fatal(err)
					}
					if err := tx.Run(c, "i-1", benchTypes[0].Name); err != nil {
						e.t.Fatal(err)
					}
					if err := tx.Requeue(c, "test"); err != nil {
						e.t.Fatal(err)
					}
				})
				if err != nil {
					e.t.Fatal(err)
				}
				v := e.instance("i-1", worker.StateRunning)
				v.Reported = []runner.Status{{ID: e.ids[0], PID: 7, State: runner.StateExited,
					StartedAt: e.clk.Now().Add(-time.Minute), FinishedAt: e.clk.Now()}}
				e.pool.views = []worker.InstanceView{v}
			},
			wantState: queue.Queued, wantCode: queue.ReasonRequeued,
			wantText: "waiting for its previous attempt to end",
		},
		{
			name:      "no type fits",
			spec:      func(s *queue.Spec) { s.RuntimeConstraints.VCPUs = 99 },
			wantState: queue.Queued, wantCode: queue.ReasonNoFit,
			wantText: "no instance type fits: needs 99 vCPUs, largest is 16",
		},
		{
			name: "idle instance with room: started, nothing pending",
			setup: func(e *pendingEnv) {
				e.pool.views = []worker.InstanceView{e.instance("i-1", worker.StateIdle)}
			},
			wantState: queue.Running, wantCode: queue.ReasonNone, wantText: "",
			after: func(e *pendingEnv) {
				if !slices.Equal(e.pool.started, e.ids[:1]) {
					e.t.Errorf("starts %v, want %v", e.pool.started, e.ids[:1])
				}
			},
		},
		{
			name: "booting instance with room",
			setup: func(e *pendingEnv) {
				e.pool.views = []worker.InstanceView{e.instance("i-2", worker.StateBooting)}
			},
			wantState: queue.Locked, wantCode: queue.ReasonBooting, wantText: "waiting for i-2 to boot",
			after: func(e *pendingEnv) {
				if len(e.pool.created) != 0 {
					e.t.Errorf("created %v, want none: i-2 has room", e.pool.created)
				}
			},
		},
		{
			name:      "instance created for it",
			wantState: queue.Locked, wantCode: queue.ReasonBooting, wantText: "waiting for an instance to boot",
			after: func(e *pendingEnv) {
				if !slices.Equal(e.pool.created, []string{benchTypes[0].Name}) {
					e.t.Errorf("created %v, want one %s", e.pool.created, benchTypes[0].Name)
				}
			},
		},
		{
			name: "fitting types out of capacity",
			setup: func(e *pendingEnv) {
				e.pool.createErr = &worker.CapacityBlockedError{Type: benchTypes[0].Name, Until: start.Add(10 * time.Minute)}
			},
			wantState: queue.Queued, wantCode: queue.ReasonCapacity,
			wantText: "no capacity: no capacity for small until 00:10:00",
		},
		{
			name: "out of capacity keeps a fresh lock",
			setup: func(e *pendingEnv) {
				e.lock(0)
				// Exactly stale_lock_timeout old is not yet stale.
				e.clk.Advance(e.cfg.Dispatcher.StaleLockTimeout)
				e.pool.createErr = &worker.CapacityBlockedError{Type: benchTypes[0].Name, Until: start.Add(10 * time.Minute)}
			},
			wantState: queue.Locked, wantCode: queue.ReasonCapacity,
			wantText: "no capacity: no capacity for small until 00:10:00",
		},
		{
			name: "cloud refused creates",
			setup: func(e *pendingEnv) {
				e.pool.createErr = &worker.CreateRefusedError{Until: start.Add(5 * time.Minute), Err: "UnauthorizedOperation"}
			},
			wantState: queue.Queued, wantCode: queue.ReasonCloudRefused,
			wantText: "cloud refused creates (not retried until 00:05:00): UnauthorizedOperation",
		},
		{
			name: "the quota of its types' scope reached",
			setup: func(e *pendingEnv) {
				e.pool.createErr = &worker.QuotaBlockedError{Type: benchTypes[0].Name, Scope: "p/on-demand", Limit: 0, Until: start.Add(time.Minute)}
			},
			wantState: queue.Queued, wantCode: queue.ReasonCloudRefused,
			wantText: "quota p/on-demand reached at 0 instances: no small create tried until 00:01:00",
		},
		{
			name: "out of capacity drops a stale lock",
			setup: func(e *pendingEnv) {
				e.lock(0)
				e.clk.Advance(e.cfg.Dispatcher.StaleLockTimeout + time.Second)
				e.pool.createErr = &worker.CapacityBlockedError{Type: "", Until: start.Add(10 * time.Minute)}
			},
			wantState: queue.Queued, wantCode: queue.ReasonCapacity,
			wantText: "no capacity: provider out of capacity until 00:10:00",
		},
		{
			name: "instances of its type fail to boot, creates backing off",
			setup: func(e *pendingEnv) {
				why := "runner deploy: installing runner at /missing/runner: exit status 2"
				e.pool.bootFailing = map[string]string{benchTypes[0].Name: why}
				e.pool.createErr = &worker.BootFailingError{Type: benchTypes[0].Name, Err: why, Until: start.Add(time.Minute)}
			},
			wantState: queue.Queued, wantCode: queue.ReasonBootFailing,
			wantText: "instances of type small fail to boot: runner deploy: installing runner at /missing/runner: exit status 2",
		},
		{
			name: "a retry of a type failing to boot is booting",
			setup: func(e *pendingEnv) {
				e.pool.bootFailing = map[string]string{benchTypes[0].Name: "boot timeout: not ready after 10m0s"}
				e.pool.views = []worker.InstanceView{e.instance("i-2", worker.StateBooting)}
			},
			wantState: queue.Locked, wantCode: queue.ReasonBootFailing,
			wantText: "instances of type small fail to boot: boot timeout: not ready after 10m0s",
		},
		{
			name: "a retry of a type failing to boot is created",
			setup: func(e *pendingEnv) {
				e.pool.bootFailing = map[string]string{benchTypes[0].Name: "runner list: exit status 127"}
			},
			wantState: queue.Locked, wantCode: queue.ReasonBootFailing,
			wantText: "instances of type small fail to boot: runner list: exit status 127",
		},
		{
			name:      "at quota, head of the queue keeps a lock",
			n:         2,
			setup:     func(e *pendingEnv) { e.pool.createErr = worker.ErrAtQuota },
			wantState: queue.Locked, wantCode: queue.ReasonQuota, wantText: "at quota (3 instances)",
		},
		{
			name: "at quota, behind the head loses its lock",
			n:    2,
			setup: func(e *pendingEnv) {
				e.lock(0)
				e.lock(1)
				e.pool.createErr = worker.ErrAtQuota
			},
			check:     1,
			wantState: queue.Queued, wantCode: queue.ReasonPosition, wantText: "position 2 in queue",
		},
		{
			name: "a held container ahead holds no place in the queue",
			n:    3,
			setup: func(e *pendingEnv) {
				if _, err := e.q.Hold(e.ids[0], "test", ""); err != nil {
					e.t.Fatal(err)
				}
				e.pool.createErr = worker.ErrAtQuota
			},
			check:     2,
			wantState: queue.Queued, wantCode: queue.ReasonPosition, wantText: "position 2 in queue",
		},
		{
			name:      "labels no type has",
			spec:      func(s *queue.Spec) { s.Scheduling.Constraints = map[string]string{"gpu": "a100", "zone": "eu"} },
			wantState: queue.Queued, wantCode: queue.ReasonNoLabels,
			wantText: "no instance type has labels gpu=a100 zone=eu",
		},
		{
			name:      "supervisor limit reached",
			n:         2,
			spec:      func(s *queue.Spec) { s.Scheduling.Supervisor = true },
			check:     1, // quota 3 × 0.3 rounds down to 0: the cap is 1
			wantState: queue.Queued, wantCode: queue.ReasonSupervisorLimit,
			wantText: "supervisor limit (1 of 1)",
			after: func(e *pendingEnv) {
				if c, _ := e.q.Get(e.ids[0]); c.State != queue.Locked {
					e.t.Errorf("first supervisor %s, want Locked (an instance created for it)", c.State)
				}
			},
		},
		{
			// The one supervisor allowed is the one its runner reports
			// running (a start the store missed, adopted this pass),
			// though it comes later in the queue: the other waits in this
			// pass, not the next.
			name: "supervisor limit counts a supervisor adopted this pass",
			n:    2,
			spec: func(s *queue.Spec) { s.Scheduling.Supervisor = true },
			setup: func(e *pendingEnv) {
				v := e.instance("i-1", worker.StateRunning)
				v.Containers = []string{e.ids[1]}
				v.Reported = []runner.Status{{ID: e.ids[1], PID: 7, State: runner.StateRunning, StartedAt: e.clk.Now()}}
				e.pool.views = []worker.InstanceView{v}
			},
			check:     0,
			wantState: queue.Queued, wantCode: queue.ReasonSupervisorLimit,
			wantText: "supervisor limit (1 of 1)",
			after: func(e *pendingEnv) {
				if c, _ := e.q.Get(e.ids[1]); c.State != queue.Running {
					e.t.Errorf("reported supervisor %s, want Running (adopted)", c.State)
				}
			},
		},
		{
			name: "at quota, an idle instance freed for a higher-priority container",
			setup: func(e *pendingEnv) {
				e.pool.views = []worker.InstanceView{e.instance("i-idle", worker.StateIdle)}
				e.pool.createErr = worker.ErrAtQuota
				two := 2
				c, err := e.q.Submit(queue.Spec{Command: []string{"true"}, Priority: &two, RuntimeConstraints: queue.Constraints{VCPUs: 4, RAM: 6 << 30}}, "test")
				if err != nil {
					e.t.Fatal(err)
				}
				e.ids = append(e.ids, c.ID)
			},
			wantState: queue.Queued, wantCode: queue.ReasonFreeing,
			wantTextOf: func(e *pendingEnv) string { return "at quota: freeing an instance for " + e.ids[1] + " (priority 2)" },
			after: func(e *pendingEnv) {
				if len(e.pool.started) != 0 {
					e.t.Errorf("started %v on the instance being freed", e.pool.started)
				}
				if len(e.pool.shutdowns) != 1 || e.pool.shutdowns[0] != "i-idle" {
					e.t.Errorf("shut down %v, want [i-idle]", e.pool.shutdowns)
				}
			},
		},
		{
			name: "at the fleet's dollar cap",
			setup: func(e *pendingEnv) {
				busy := e.instance("i-busy", worker.StateRunning)
				busy.Containers = []string{"other"}
				e.pool.views = []worker.InstanceView{busy}
				e.cfg.Dispatcher.MaxHourlyCost = 0.03 // one small more would be 0.04
				e.sched = New(e.cfg, e.q, e.pool, e.clk, nil)
			},
			wantState: queue.Locked, wantCode: queue.ReasonBudget,
			wantText: "fleet at $0.02/h of $0.03/h",
			after: func(e *pendingEnv) {
				if len(e.pool.created) != 0 {
					e.t.Errorf("created %v past the cap", e.pool.created)
				}
			},
		},
		{
			name:      "creates throttled",
			setup:     func(e *pendingEnv) { e.pool.createErr = worker.ErrThrottled },
			wantState: queue.Queued, wantCode: queue.ReasonCreating,
			wantText: "waiting to create a small instance",
		},
		{
			name: "creates throttled, a stale lock dropped",
			setup: func(e *pendingEnv) {
				e.lock(0)
				e.clk.Advance(e.cfg.Dispatcher.StaleLockTimeout + time.Second)
				e.pool.createErr = worker.ErrThrottled
			},
			wantState: queue.Queued, wantCode: queue.ReasonCreating,
			wantText: "waiting to create a small instance",
		},
	}
	covered := map[queue.ReasonCode]bool{}
	for _, tc := range cases {
		covered[tc.wantCode] = true
	}
	for _, code := range reasonsSet(t) {
		if !covered[code] {
			t.Errorf("the scheduler sets %s, and no row checks it", code)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(start)
			q := openTestQueue(t, clk)
			cfg := config.Default()
			cfg.InstanceTypes = benchTypes
			e := &pendingEnv{t: t, clk: clk, cfg: cfg, q: q, pool: &stubPool{probed: true, quota: 3}}
			for range max(tc.n, 1) {
				spec := queue.Spec{Command: []string{"true"}, RuntimeConstraints: small}
				if tc.spec != nil {
					tc.spec(&spec)
				}
				c, err := q.Submit(spec, "test")
				if err != nil {
					t.Fatal(err)
				}
				e.ids = append(e.ids, c.ID)
			}
			e.sched = New(cfg, q, e.pool, clk, nil)
			if tc.setup != nil {
				tc.setup(e)
			}
			e.sched.RunPass()
			c, ok := q.Get(e.ids[tc.check])
			if !ok {
				t.Fatalf("container %s gone", e.ids[tc.check])
			}
			if tc.wantTextOf != nil {
				tc.wantText = tc.wantTextOf(e)
			}
			if c.State != tc.wantState || c.ReasonCode != tc.wantCode || c.Reason != tc.wantText {
				t.Errorf("got %s %s %q, want %s %s %q", c.State, c.ReasonCode, c.Reason, tc.wantState, tc.wantCode, tc.wantText)
			}
			if tc.after != nil {
				tc.after(e)
			}
		})
	}
}

// reasonsSet lists the reason codes this package's non-test code names, so
// that a reason added to the scheduler without a row above fails the test.
func reasonsSet(t *testing.T) []queue.ReasonCode {
	t.Helper()
	values := reasonValues(t)
	var out []queue.ReasonCode
	eachFile(t, ".", func(fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "queue" {
				return true
			}
			if code, ok := values[sel.Sel.Name]; ok && !slices.Contains(out, code) {
				out = append(out, code)
			}
			return true
		})
	})
	if len(out) == 0 {
		t.Fatal("found no reason codes in the scheduler's code")
	}
	return out
}

// reasonValues maps the names of the ReasonCode constants (engine/view,
// which engine/queue aliases) to their values, read from its source.
func reasonValues(t *testing.T) map[string]queue.ReasonCode {
	t.Helper()
	values := map[string]queue.ReasonCode{}
	eachFile(t, "../view", func(_ *token.FileSet, f *ast.File) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "ReasonCode" {
					continue
				}
				for i, name := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok {
						t.Fatalf("queue.%s is not a literal", name.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					values[name.Name] = queue.ReasonCode(v)
				}
			}
		}
	})
	if len(values) == 0 {
		t.Fatal("found no ReasonCode constants in engine/view")
	}
	return values
}

// eachFile parses every non-test Go file in dir.
func eachFile(t *testing.T, dir string, fn func(*token.FileSet, *ast.File)) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		fn(fset, f)
	}
}
