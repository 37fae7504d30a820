package scheduler

import (
	"fmt"
	"reflect"
	"slices"
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

// quietWorld is a real queue on a fake clock, the stub pool and a
// scheduler, stepped as the engine steps it: a pass only when Quiet says
// one would change something.
type quietWorld struct {
	*pendingEnv
	skipped int
}

func newQuietWorld(t *testing.T, n int, spec func(*queue.Spec)) *quietWorld {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := openTestQueue(t, clk)
	cfg := config.Default()
	cfg.InstanceTypes = benchTypes
	e := &pendingEnv{t: t, clk: clk, cfg: cfg, q: q, pool: &stubPool{probed: true, quota: 3}}
	for range n {
		s := queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 30}}
		if spec != nil {
			spec(&s)
		}
		c, err := q.Submit(s, "test")
		if err != nil {
			t.Fatal(err)
		}
		e.ids = append(e.ids, c.ID)
	}
	e.sched = New(cfg, q, e.pool, clk, nil)
	return &quietWorld{pendingEnv: e}
}

// step is the engine's: skip the pass if Quiet says so, and then check,
// by running it all the same, that it would have changed nothing: no
// record, no pool verb, the same Stats. It reports whether the pass was
// skipped.
func (w *quietWorld) step() (skipped bool) {
	w.t.Helper()
	st, quiet := w.sched.Quiet()
	if !quiet {
		w.sched.RunPass()
		return false
	}
	w.skipped++
	gen := w.q.Generation()
	created, started, shut := len(w.pool.created), len(w.pool.started), len(w.pool.shutdowns)
	got := w.sched.RunPass()
	if w.q.Generation() != gen || len(w.pool.created) != created || len(w.pool.started) != started || len(w.pool.shutdowns) != shut {
		w.t.Fatalf("at %s Quiet said a pass would change nothing, and one changed: generation %d → %d, creates %d → %d, starts %d → %d, shutdowns %d → %d",
			w.clk.Now().Format(time.TimeOnly), gen, w.q.Generation(), created, len(w.pool.created), started, len(w.pool.started), shut, len(w.pool.shutdowns))
	}
	got.Duration, st.Duration = 0, 0
	if got.LongestWait != st.LongestWait || got.OverQuota != st.OverQuota || got.AtQuota != st.AtQuota || got.QuotaLimit != st.QuotaLimit ||
		got.AllocatedNotStart != st.AllocatedNotStart || len(got.ByState) != len(st.ByState) {
		w.t.Fatalf("at %s the skipped pass's Stats %+v differ from a real one's %+v", w.clk.Now().Format(time.TimeOnly), st, got)
	}
	return true
}

// reason is container i's pending reason code.
func (w *quietWorld) reason(i int) queue.ReasonCode {
	w.t.Helper()
	c, ok := w.q.Get(w.ids[i])
	if !ok {
		w.t.Fatalf("container %s gone", w.ids[i])
	}
	return c.ReasonCode
}

// TestQuietPassesAreSkipped: on a queue where nothing can change (paused,
// no type fits, held), the passes after the first are skipped, however
// many, and the longest wait still grows in the Stats they report.
func TestQuietPassesAreSkipped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(w *quietWorld)
		spec  func(*queue.Spec)
		want  queue.ReasonCode
	}{
		{name: "paused", setup: func(w *quietWorld) {
			if err := w.q.SetPaused(true, "test", ""); err != nil {
				t.Fatal(err)
			}
		}, want: queue.ReasonPaused},
		{name: "no type fits", spec: func(s *queue.Spec) { s.RuntimeConstraints.VCPUs = 1000 }, want: queue.ReasonNoFit},
		{name: "held", setup: func(w *quietWorld) {
			for _, id := range w.ids {
				if _, err := w.q.Hold(id, "test", ""); err != nil {
					t.Fatal(err)
				}
			}
		}, want: queue.ReasonHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newQuietWorld(t, 50, tc.spec)
			if tc.setup != nil {
				tc.setup(w)
			}
			w.step() // sets the reasons
			w.step() // finds them set: quiet from here on
			passes := w.sched.Passes()
			for range 100 {
				w.clk.Advance(time.Second)
				st, quiet := w.sched.Quiet()
				if !quiet {
					t.Fatalf("at %s a pass would run on a queue where nothing changed (%d passes so far)", w.clk.Now().Format(time.TimeOnly), w.sched.Passes())
				}
				if want := w.clk.Now().Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); st.LongestWait != want {
					t.Fatalf("a skipped pass reports the longest wait %s, want %s", st.LongestWait, want)
				}
			}
			if got := w.sched.Passes(); got != passes {
				t.Errorf("%d passes over 100 quiet ticks, want none", got-passes)
			}
			if got := w.reason(0); got != tc.want {
				t.Errorf("reason %s, want %s", got, tc.want)
			}
			// A change is the next pass's at once: a container submitted
			// is mapped.
			c, err := w.q.Submit(queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1000, RAM: 1 << 30}}, "test")
			if err != nil {
				t.Fatal(err)
			}
			if _, quiet := w.sched.Quiet(); quiet {
				t.Fatal("a submit left the queue quiet")
			}
			w.step()
			if got, _ := w.q.Get(c.ID); got.ReasonCode == "" {
				t.Errorf("the submitted container has no reason after the next step: %+v", got)
			}
		})
	}
}

// TestQuietPassesKeepTheirDeadlines: each thing a pass does when a time
// comes, with nothing else changing, still happens at that time when the
// passes before it were skipped: the start-up wait's end, max_run_time,
// a type's boot back-off beginning and ending, the quota limit, a start
// failure, an instance's change (and at quota, TestQuietPassesAtQuota).
func TestQuietPassesKeepTheirDeadlines(t *testing.T) {
	t.Parallel()
	t.Run("start-up wait", func(t *testing.T) {
		t.Parallel()
		w := newQuietWorld(t, 3, nil)
		w.pool.probed = false // an instance not probed yet: the wait lasts stale_lock_timeout
		w.pool.views = []worker.InstanceView{w.instance("i-busy", worker.StateUnknown)}
		end := w.clk.Now().Add(w.cfg.Dispatcher.StaleLockTimeout)
		for w.clk.Now().Before(end) {
			w.step()
			if got := w.reason(0); got != queue.ReasonStartup {
				t.Fatalf("at %s, before the wait ends: reason %s", w.clk.Now().Format(time.TimeOnly), got)
			}
			w.clk.Advance(7 * time.Second)
		}
		if w.skipped == 0 {
			t.Fatal("no pass was skipped during the wait: the test shows nothing")
		}
		w.clk.Set(end)
		w.step()
		if got := w.reason(0); got == queue.ReasonStartup {
			t.Errorf("at the wait's end (%s) still %s", end.Format(time.TimeOnly), got)
		}
	})
	t.Run("max_run_time", func(t *testing.T) {
		t.Parallel()
		const mrt = 90 * time.Second
		w := newQuietWorld(t, 1, func(s *queue.Spec) { s.Scheduling.MaxRunTime = queue.Duration(mrt) })
		idle := w.instance("i-1", worker.StateIdle)
		w.pool.views = []worker.InstanceView{idle}
		w.step()
		if len(w.pool.started) != 1 {
			t.Fatalf("started %v, want the container", w.pool.started)
		}
		c, _ := w.q.Get(w.ids[0])
		run := w.instance("i-1", worker.StateRunning)
		run.Containers = []string{c.ID}
		run.Reported = []runner.Status{{ID: c.ID, State: runner.StateRunning, StartedAt: c.StartedAt}}
		w.pool.views = []worker.InstanceView{run}
		due := c.StartedAt.Add(mrt)
		for !w.clk.Now().After(due) {
			w.step()
			if c, _ := w.q.Get(w.ids[0]); c.KillRequested {
				t.Fatalf("killed at %s, before max_run_time (%s)", w.clk.Now().Format(time.TimeOnly), due.Format(time.TimeOnly))
			}
			w.clk.Advance(10 * time.Second)
		}
		if w.skipped == 0 {
			t.Fatal("no pass was skipped while it ran: the test shows nothing")
		}
		w.step()
		if c, _ := w.q.Get(w.ids[0]); !c.KillRequested {
			t.Errorf("not killed at %s, past max_run_time (%s)", w.clk.Now().Format(time.TimeOnly), due.Format(time.TimeOnly))
		}
	})
	t.Run("boot back-off and quota limit", func(t *testing.T) {
		t.Parallel()
		// Waiting on a booting instance: no create asked, so quiet; the
		// pool's answers that change with time alone are asked again.
		w := newQuietWorld(t, 1, nil)
		w.pool.views = []worker.InstanceView{w.instance("i-boot", worker.StateBooting)}
		w.step()
		w.step()
		if got := w.reason(0); got != queue.ReasonBooting {
			t.Fatalf("reason %s, want %s", got, queue.ReasonBooting)
		}
		for range 10 {
			w.clk.Advance(time.Second)
			if !w.step() {
				t.Fatalf("at %s a pass ran waiting on a booting instance with nothing changing", w.clk.Now().Format(time.TimeOnly))
			}
		}
		w.pool.bootFailing = map[string]string{benchTypes[0].Name: "boot failed"}
		w.step()
		if got := w.reason(0); got != queue.ReasonBootFailing {
			t.Fatalf("after the type's boots began failing: reason %s, want %s", got, queue.ReasonBootFailing)
		}
		w.step()
		w.pool.bootFailing = nil // its back-off over
		w.step()
		if got := w.reason(0); got != queue.ReasonBooting {
			t.Errorf("after the type's back-off ended: reason %s, want %s", got, queue.ReasonBooting)
		}
		w.step()
		w.pool.quota++
		if w.step() {
			t.Error("the pool's quota limit changing did not make the next step a pass")
		}
	})
	t.Run("start failure and instance change", func(t *testing.T) {
		t.Parallel()
		w := newQuietWorld(t, 1, func(s *queue.Spec) { s.RuntimeConstraints.VCPUs = 1000 })
		w.step() // sets the reason
		w.step() // finds it set
		if !w.step() {
			t.Fatal("nothing can start, and the third pass still ran")
		}
		w.pool.failures = []worker.StartFailure{{ContainerID: "c-gone", InstanceID: cloud.InstanceID("i-1")}}
		if w.step() {
			t.Error("a start failure did not make the next step a pass")
		}
		w.step()
		w.pool.views = []worker.InstanceView{w.instance("i-2", worker.StateBooting)}
		if w.step() {
			t.Error("an instance added did not make the next step a pass")
		}
		w.step()
		w.pool.views[0].State = worker.StateIdle
		if w.step() {
			t.Error("an instance's state changing did not make the next step a pass")
		}
	})
}

// listAgain is a listing and a probe of every instance now: the times
// change, nothing a pass acts on does.
func (w *quietWorld) listAgain() {
	for i := range w.pool.views {
		w.pool.views[i].ListedAt = w.clk.Now()
		w.pool.views[i].LastProbe = w.clk.Now()
	}
}

// quietSteps advances the clock by a second and steps n times, the
// instances listed again at each, and fails unless every pass was skipped.
func (w *quietWorld) quietSteps(n int) {
	w.t.Helper()
	for range n {
		w.clk.Advance(time.Second)
		w.listAgain()
		if !w.step() {
			w.t.Fatalf("at %s a pass ran with nothing changed", w.clk.Now().Format(time.TimeOnly))
		}
	}
}

// runningOn starts the first n containers on n idle instances and shows
// them as their runners list them: the pool's instances, all busy.
func (w *quietWorld) runningOn(n int) {
	w.t.Helper()
	for i := range n {
		w.pool.views = append(w.pool.views, w.instance(cloud.InstanceID(fmt.Sprintf("i-%d", i)), worker.StateIdle))
	}
	w.step()
	if len(w.pool.started) != n {
		w.t.Fatalf("started %v, want %d", w.pool.started, n)
	}
	for i, id := range w.pool.started {
		c, _ := w.q.Get(id)
		v := &w.pool.views[i]
		v.State = worker.StateRunning
		v.Containers = []string{id}
		v.Reported = []runner.Status{{ID: id, State: runner.StateRunning, StartedAt: c.StartedAt}}
	}
}

// TestQuietPassesAtQuota: at quota the pool refuses every create, and a
// pass that changed nothing else is skipped while the pool would refuse
// it alike — with its instances listed and probed at every step, booting,
// a type failing to create or to boot, creates rate-limited — and a
// pass runs at once when its answer changes or a deadline of the pass
// comes (a lock going stale, a listing that misses a container). Every
// skipped pass is run all the same (quietWorld.step), and the test fails
// if one would have changed anything. max_instances is read once at
// start (no reload of the config), so the quota changes only as the
// pool's estimate does.
func TestQuietPassesAtQuota(t *testing.T) {
	t.Parallel()
	small := benchTypes[0].Name
	t.Run("instances listed", func(t *testing.T) {
		t.Parallel()
		w := newQuietWorld(t, 6, nil)
		w.pool.quota = 2
		w.runningOn(2)
		w.pool.createErr = worker.ErrAtQuota
		w.step() // the rest wait at quota
		w.step() // and find that so
		if got := w.reason(2); got != queue.ReasonQuota {
			t.Fatalf("reason %s, want %s", got, queue.ReasonQuota)
		}
		passes := w.sched.Passes()
		w.quietSteps(50)
		if got := w.sched.Passes() - passes; got != 50 {
			// quietWorld.step runs each skipped pass to check it.
			t.Fatalf("%d passes checked over 50 steps, want 50", got)
		}
		// One container exits: a pass, which forgets it.
		c := w.pool.views[0].Containers[0]
		w.pool.views[0].Reported[0].State = runner.StateExited
		w.pool.views[0].Containers = nil
		if w.step() {
			t.Fatal("an exit reported did not make the next step a pass")
		}
		if got, _ := w.q.Get(c); !got.State.Final() {
			t.Fatalf("the exited container is %s", got.State)
		}
		// The quota probe: the pool would create again.
		w.pool.views[0].Reported = nil
		w.step()
		w.step()
		w.pool.createErr = nil
		if w.step() {
			t.Fatal("a step after the pool's quota rose skipped its pass")
		}
		if len(w.pool.created) == 0 {
			t.Fatal("the pass after the quota's rise did not create")
		}
	})
	t.Run("failing to create", func(t *testing.T) {
		t.Parallel()
		w := newQuietWorld(t, 3, nil)
		until := w.clk.Now().Add(time.Minute)
		w.pool.createErr = &worker.CapacityBlockedError{Type: small, Until: until}
		w.step()
		w.step()
		if got := w.reason(0); got != queue.ReasonCapacity {
			t.Fatalf("reason %s, want %s", got, queue.ReasonCapacity)
		}
		w.quietSteps(10)
		// The back-off extended: another answer, shown in the reason.
		w.pool.createErr = &worker.CapacityBlockedError{Type: small, Until: until.Add(time.Minute)}
		if w.step() {
			t.Fatal("a new capacity back-off did not make the next step a pass")
		}
		w.step()
		w.pool.createErr = &worker.BootFailingError{Type: small, Failures: 3, Err: "no runner", Until: until}
		if w.step() {
			t.Fatal("a boot back-off did not make the next step a pass")
		}
		if got := w.reason(0); got != queue.ReasonBootFailing {
			t.Fatalf("reason %s, want %s", got, queue.ReasonBootFailing)
		}
		w.step() // finds the reasons set
		w.quietSteps(10)
		w.pool.createErr = nil // the back-off over
		if w.step() || len(w.pool.created) == 0 {
			t.Fatal("the step after the back-off ended did not create")
		}
	})
	t.Run("rate-limited with a lock going stale", func(t *testing.T) {
		t.Parallel()
		w := newQuietWorld(t, 2, nil)
		w.pool.quota = 5
		w.lock(0) // as a pass before the limit would have
		c, _ := w.q.Get(w.ids[0])
		stale := c.LockedAt.Add(w.cfg.Dispatcher.StaleLockTimeout)
		w.pool.createErr = worker.ErrThrottled
		w.step()
		w.step()
		for !w.clk.Now().After(stale) {
			if c, _ := w.q.Get(w.ids[0]); c.State != queue.Locked {
				t.Fatalf("unlocked at %s, before its lock went stale (%s)", w.clk.Now().Format(time.TimeOnly), stale.Format(time.TimeOnly))
			}
			w.clk.Advance(7 * time.Second)
			w.listAgain()
			w.step()
		}
		if w.skipped == 0 {
			t.Fatal("no pass was skipped while throttled: the test shows nothing")
		}
		if c, _ := w.q.Get(w.ids[0]); c.State != queue.Queued {
			t.Errorf("still %s at %s, past its lock's stale time (%s)", c.State, w.clk.Now().Format(time.TimeOnly), stale.Format(time.TimeOnly))
		}
	})
	t.Run("booting", func(t *testing.T) {
		t.Parallel()
		// One instance booting for the first, the rest at quota.
		w := newQuietWorld(t, 4, nil)
		w.pool.views = []worker.InstanceView{w.instance("i-boot", worker.StateBooting)}
		w.pool.createErr = worker.ErrAtQuota
		w.step()
		w.step()
		if got := w.reason(0); got != queue.ReasonBooting {
			t.Fatalf("reason %s, want %s", got, queue.ReasonBooting)
		}
		w.quietSteps(10)
		w.pool.views[0].State = worker.StateIdle // booted
		if w.step() || len(w.pool.started) != 1 {
			t.Fatalf("the step after the boot started %v, want the first container", w.pool.started)
		}
	})
	t.Run("a listing that misses a container", func(t *testing.T) {
		t.Parallel()
		w := newQuietWorld(t, 2, nil)
		w.pool.quota = 1
		w.runningOn(1)
		w.pool.createErr = worker.ErrAtQuota
		// Its runner's last listing came before the start, and shows
		// nothing: the next one decides.
		v := &w.pool.views[0]
		v.ListedAt, v.Containers, v.Reported = w.clk.Now().Add(-time.Second), nil, nil
		w.step()
		w.step()
		for range 5 {
			w.clk.Advance(time.Second)
			if !w.step() {
				t.Fatal("a pass ran with nothing changed")
			}
		}
		w.pool.views[0].ListedAt = w.clk.Now() // listed again, still without it
		if w.step() {
			t.Fatal("a listing after the start that misses the container did not make the next step a pass")
		}
		if c, _ := w.q.Get(w.pool.started[0]); c.State == queue.Running {
			t.Error("a container its runner's listing misses is still Running")
		}
	})
}

// TestSamePassViewReadsAllButTheIgnored: a change of any field of an
// instance's view makes it differ for a pass, except the fields in
// passIgnores; ListedAt counts only when the pass waited on a listing.
func TestSamePassViewReadsAllButTheIgnored(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := worker.InstanceView{
		Instance: view.Instance{ID: "i-1", Type: "small", ProviderType: "p", Address: "a", Price: 1, State: worker.StateRunning,
			IdleBehavior: worker.IdleRun, Containers: []string{"c-1"}, LastContainer: "c-0", LastBusy: t0, AppearedAt: t0,
			LastProbe: t0, LastError: "e", UnreachableSince: t0, ProbeError: "p", CreatedAt: t0},
		AskedAt: t0, BootedAt: t0, ContainersLost: "", ListedAt: t0,
		Reported: []runner.Status{{ID: "c-1", PID: 1, State: runner.StateRunning, StartedAt: t0, Health: &runner.Health{State: "ok"}}},
	}
	ignored := map[string]bool{}
	for _, f := range passIgnores {
		ignored[f] = true
	}
	seen := 0
	var walk func(t reflect.Type, path []int)
	walk = func(typ reflect.Type, path []int) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			at := append(slices.Clone(path), i)
			if f.Anonymous {
				walk(f.Type, at)
				continue
			}
			seen++
			b := base
			b.Containers, b.Reported = slices.Clone(base.Containers), slices.Clone(base.Reported)
			perturb(t, reflect.ValueOf(&b).Elem().FieldByIndex(at), f.Name)
			want := !ignored[f.Name] && f.Name != "ListedAt"
			if got := !samePassView(&base, &b, false); got != want {
				t.Errorf("%s changed: differs for a pass %v, want %v", f.Name, got, want)
			}
			if f.Name == "ListedAt" && samePassView(&base, &b, true) {
				t.Error("ListedAt changed does not differ for a pass that waited on a listing")
			}
			delete(ignored, f.Name)
		}
	}
	walk(reflect.TypeFor[worker.InstanceView](), nil)
	for f := range ignored {
		t.Errorf("passIgnores names %s, which is no field", f)
	}
	// The health of a report, by value.
	b := base
	b.Reported = []runner.Status{base.Reported[0]}
	b.Reported[0].Health = &runner.Health{State: "ok"}
	if !samePassView(&base, &b, false) {
		t.Error("equal health reports behind two pointers differ for a pass")
	}
	b.Reported[0].Health = &runner.Health{State: "failing"}
	if samePassView(&base, &b, false) {
		t.Error("a report's health changed does not differ for a pass")
	}
	if seen < 20 {
		t.Errorf("walked %d fields: the walk missed the embedded view", seen)
	}
}

// perturb changes v, a field of an instance's view, to another value.
func perturb(t *testing.T, v reflect.Value, name string) {
	t.Helper()
	switch x := v.Addr().Interface().(type) {
	case *time.Time:
		*x = x.Add(time.Second)
		return
	case *[]string:
		*x = append(*x, "c-2")
		return
	case *[]runner.Status:
		(*x)[0].PID++
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Float64:
		v.SetFloat(v.Float() + 1)
	default:
		t.Fatalf("field %s of kind %s: perturb cannot change it", name, v.Kind())
	}
}
