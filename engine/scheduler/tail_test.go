package scheduler

import (
	"reflect"
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

// tailEnv is one side of TestTailPathMatchesMapOne: a queue at quota and
// its scheduler, with the containers' ids in submission order.
type tailEnv struct {
	clk   *clock.Fake
	q     *queue.Queue
	pool  *stubPool
	sched *Scheduler
	ids   []string
}

// TestTailPathMatchesMapOne runs the same passes on two identical queues at
// quota, one walking its waiting tail through walkTail and one through
// mapOne only, and checks that every container and the pass statistics end
// each pass alike: held, priority 0, unfitting, labelled, supervisor,
// Locked, blocked and adopted containers among the waiting ones, with priorities,
// holds and submissions changing between passes.
func TestTailPathMatchesMapOne(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		instances bool // an idle and a busy instance, besides none
	}{
		{"no instances", false},
		{"idle and busy instances", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fast, slow := newTailEnv(t, tc.instances, false), newTailEnv(t, tc.instances, true)
			for pass := range 6 {
				for _, e := range []*tailEnv{fast, slow} {
					e.change(t, pass)
				}
				stFast, stSlow := fast.sched.RunPass(), slow.sched.RunPass()
				stFast.Duration, stSlow.Duration = 0, 0
				if !reflect.DeepEqual(stFast, stSlow) {
					t.Fatalf("pass %d: stats\n%+v\nwant (mapOne only)\n%+v", pass, stFast, stSlow)
				}
				if stFast.OverQuota < 200 {
					t.Fatalf("pass %d: %d over quota: the tail is not exercised", pass, stFast.OverQuota)
				}
				if c, _ := fast.q.Get(fast.ids[201]); pass >= 3 && c.State != queue.Running {
					t.Fatalf("pass %d: container 201 is %s, not adopted", pass, c.State)
				}
				codes := map[queue.ReasonCode]bool{}
				for i := range fast.ids {
					a, _ := fast.q.Get(fast.ids[i])
					b, _ := slow.q.Get(slow.ids[i])
					if a.State != b.State || a.ReasonCode != b.ReasonCode || a.Reason != b.Reason || a.InstanceType != b.InstanceType {
						t.Errorf("pass %d, container %d: %s %s %q %q, want (mapOne only) %s %s %q %q", pass, i,
							a.State, a.ReasonCode, a.Reason, a.InstanceType, b.State, b.ReasonCode, b.Reason, b.InstanceType)
					}
					codes[b.ReasonCode] = true
				}
				// Every way out of the tail's common case is taken.
				want := []queue.ReasonCode{queue.ReasonPosition, queue.ReasonQuota, queue.ReasonHeld, queue.ReasonPriorityZero,
					queue.ReasonNoFit, queue.ReasonNoLabels}
				if pass == 0 { // the Locked supervisors are unlocked in it
					want = append(want, queue.ReasonSupervisorLimit)
				}
				if pass >= 2 {
					want = append(want, queue.ReasonRequeued)
				}
				for _, code := range want {
					if !codes[code] {
						t.Errorf("pass %d: no container left %s", pass, code)
					}
				}
			}
		})
	}
}

func newTailEnv(t *testing.T, instances, mapOneOnly bool) *tailEnv {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := openTestQueue(t, clk)
	cfg := config.Default()
	cfg.InstanceTypes = benchTypes
	cfg.Dispatcher.MaxInstances = 10
	cfg.Dispatcher.SupervisorFraction = 0.1
	e := &tailEnv{clk: clk, q: q, pool: &stubPool{probed: true, quota: 10, createErr: worker.ErrAtQuota}}
	e.submit(t, 0, 300)
	if instances {
		typ := benchTypes[0]
		idle := worker.InstanceView{
			Instance: view.Instance{
				ID:           "i-idle",
				Type:         typ.Name,
				ProviderType: typ.ProviderType,
				Price:        typ.Price,
				State:        worker.StateIdle,
				IdleBehavior: worker.IdleRun,
			},
			ListedAt: clk.Now(),
		}
		busy := idle
		busy.ID, busy.State = "i-busy", worker.StateRunning
		// The busy one runs container 0 and has no room for more.
		err := q.Pass(func(tx *queue.Tx) {
			c := tx.Get(e.ids[0])
			if err := tx.Lock(c, typ.Name); err != nil {
				t.Fatal(err)
			}
			if err := tx.Run(c, "i-busy", typ.Name); err != nil {
				t.Fatal(err)
			}
			busy.Containers = []string{c.ID}
			busy.Reported = []runner.Status{{ID: c.ID, PID: 1, State: runner.StateRunning, StartedAt: clk.Now()}}
		})
		if err != nil {
			t.Fatal(err)
		}
		e.pool.views = []worker.InstanceView{idle, busy}
	}
	// Some containers are Locked, as an earlier pass would leave them,
	// among them three supervisors where supervisor_fraction allows one:
	// the first walked keeps its lock (or starts), the other Locked ones
	// are unlocked for the limit, and the Queued ones wait for it.
	err := q.Pass(func(tx *queue.Tx) {
		for _, i := range []int{11, 34, 57} {
			if err := tx.Lock(tx.Get(e.ids[i]), benchTypes[0].Name); err != nil {
				t.Fatal(err)
			}
		}
		for i := 5; i < len(e.ids); i += 37 {
			if err := tx.Lock(tx.Get(e.ids[i]), benchTypes[i%len(benchTypes)].Name); err != nil {
				t.Fatal(err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	e.sched = New(cfg, q, e.pool, clk, nil)
	e.sched.noTailPath = mapOneOnly
	return e
}

// submit submits n containers, the k-th of them (counting from first)
// of a kind by k: mostly plain ones of the bench shapes, some that no type
// fits, labelled, supervisor or priority-0 ones.
func (e *tailEnv) submit(t *testing.T, first, n int) {
	t.Helper()
	specs := make([]queue.Spec, n)
	for j := range specs {
		k := first + j
		prio := 1 + k%4
		s := queue.Spec{Command: []string{"true"}, RuntimeConstraints: benchShape(k), Priority: &prio}
		switch k % 23 {
		case 3:
			s.RuntimeConstraints.VCPUs = 99
		case 7:
			s.Scheduling.Constraints = map[string]string{"zone": "eu"}
		case 11:
			s.Scheduling.Supervisor = true
		case 13:
			zero := 0
			s.Priority = &zero
		case 17:
			s.RuntimeConstraints.RAM = int64(k) << 20 // a shape of its own
		}
		specs[j] = s
	}
	cs, err := e.q.SubmitBatch(specs, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		e.ids = append(e.ids, c.ID)
	}
}

// change makes the same changes on either side before pass: holds and
// releases, new priorities, new containers, and a runner still reporting
// an attempt of a container that was requeued.
func (e *tailEnv) change(t *testing.T, pass int) {
	t.Helper()
	for i := pass; i < len(e.ids); i += 19 {
		c, _ := e.q.Get(e.ids[i])
		if c.State.Final() || c.State == queue.Running {
			continue
		}
		var err error
		switch {
		case c.Held:
			_, err = e.q.Release(e.ids[i], "test", "")
		case (i+pass)%3 == 0:
			_, err = e.q.Hold(e.ids[i], "test", "")
		default:
			_, err = e.q.SetPriority(e.ids[i], (i+pass)%5, "test", "")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	e.submit(t, len(e.ids), 20)
	if pass == 2 {
		// Container 42 ran on i-gone and was requeued; i-gone's runner
		// still lists it, so it must wait for that attempt to end.
		err := e.q.Pass(func(tx *queue.Tx) {
			c := tx.Get(e.ids[42])
			if c.State == queue.Queued {
				if err := tx.Lock(c, benchTypes[0].Name); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Run(c, "i-gone", benchTypes[0].Name); err != nil {
				t.Fatal(err)
			}
			if err := tx.Requeue(c, "test"); err != nil {
				t.Fatal(err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		typ := benchTypes[0]
		e.pool.views = append(e.pool.views, worker.InstanceView{
			Instance: view.Instance{
				ID:           cloud.InstanceID("i-gone"),
				Type:         typ.Name,
				ProviderType: typ.ProviderType,
				Price:        typ.Price,
				State:        worker.StateRunning,
				IdleBehavior: worker.IdleHold,
			},
			ListedAt: e.clk.Now(),
			Reported: []runner.Status{{ID: e.ids[42], PID: 9, State: runner.StateExited,
				StartedAt: e.clk.Now().Add(-time.Minute), FinishedAt: e.clk.Now()}},
		})
	}
	if pass == 3 {
		// i-lost's runner runs container 201, deep in the waiting tail,
		// which its record missed (a crash between start and write): the
		// pass adopts it before its walk reaches it.
		typ := benchTypes[0]
		e.pool.views = append(e.pool.views, worker.InstanceView{
			Instance: view.Instance{
				ID:           cloud.InstanceID("i-lost"),
				Type:         typ.Name,
				ProviderType: typ.ProviderType,
				Price:        typ.Price,
				State:        worker.StateRunning,
				IdleBehavior: worker.IdleRun,
				Containers:   []string{e.ids[201]},
			},
			ListedAt: e.clk.Now(),
			Reported: []runner.Status{{ID: e.ids[201], PID: 7,
				State: runner.StateRunning, StartedAt: e.clk.Now().Add(-time.Minute)}},
		})
	}
	e.clk.Advance(time.Second)
}
