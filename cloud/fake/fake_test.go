package fake

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/runner"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

var (
	small = cloud.InstanceType{Name: "small", ProviderType: "t.small", VCPUs: 1}
	large = cloud.InstanceType{Name: "large", ProviderType: "t.large", VCPUs: 8}
)

func newDriver(t *testing.T, opts Options) (*Driver, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	opts.Clock = clk
	return New(opts), clk
}

func mustCreate(t *testing.T, d *Driver, it cloud.InstanceType, tags cloud.Tags) cloud.Instance {
	t.Helper()
	inst, err := d.Create(context.Background(), it, tags)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return inst
}

func ids(insts []cloud.Instance) []cloud.InstanceID {
	var out []cloud.InstanceID
	for _, i := range insts {
		out = append(out, i.ID())
	}
	return out
}

func TestCreateListDestroyTags(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t, Options{})
	a := mustCreate(t, d, small, cloud.Tags{cloud.TagOwner: "me", cloud.TagInstanceType: "small"})
	b := mustCreate(t, d, large, cloud.Tags{cloud.TagOwner: "me", cloud.TagInstanceType: "large"})
	c := mustCreate(t, d, small, cloud.Tags{cloud.TagOwner: "other"})

	if a.ID() != "ct-0001" || b.ID() != "ct-0002" || c.ID() != "ct-0003" {
		t.Fatalf("ids %s %s %s", a.ID(), b.ID(), c.ID())
	}
	if a.ProviderType() != "t.small" || b.ProviderType() != "t.large" {
		t.Fatalf("provider types %s %s", a.ProviderType(), b.ProviderType())
	}
	if a.Address() != "ct-0001:22" || a.String() != "ct-0001" {
		t.Fatalf("address %q string %q", a.Address(), a.String())
	}

	for _, tc := range []struct {
		name   string
		filter cloud.Tags
		want   []cloud.InstanceID
	}{
		{"nil filter", nil, []cloud.InstanceID{"ct-0001", "ct-0002", "ct-0003"}},
		{"owner", cloud.Tags{cloud.TagOwner: "me"}, []cloud.InstanceID{"ct-0001", "ct-0002"}},
		{"owner+type", cloud.Tags{cloud.TagOwner: "me", cloud.TagInstanceType: "large"}, []cloud.InstanceID{"ct-0002"}},
		{"no match", cloud.Tags{cloud.TagOwner: "nobody"}, nil},
		{"missing key", cloud.Tags{cloud.TagSecret: ""}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := d.Instances(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ids(got), tc.want) {
				t.Fatalf("got %v want %v", ids(got), tc.want)
			}
		})
	}

	// Tags returns a copy.
	tg := a.Tags()
	tg[cloud.TagOwner] = "mutated"
	if a.Tags()[cloud.TagOwner] != "me" {
		t.Fatal("Tags did not return a copy")
	}
	// SetTags replaces.
	if err := a.SetTags(ctx, cloud.Tags{cloud.TagIdleBehavior: "hold"}); err != nil {
		t.Fatal(err)
	}
	if got := a.Tags(); !reflect.DeepEqual(got, cloud.Tags{cloud.TagIdleBehavior: "hold"}) {
		t.Fatalf("tags after SetTags: %v", got)
	}
	list, _ := d.Instances(ctx, cloud.Tags{cloud.TagIdleBehavior: "hold"})
	if !reflect.DeepEqual(ids(list), []cloud.InstanceID{"ct-0001"}) {
		t.Fatalf("listing by new tags: %v", ids(list))
	}
	if !reflect.DeepEqual(list[0].Tags(), cloud.Tags{cloud.TagIdleBehavior: "hold"}) {
		t.Fatalf("listed tags: %v", list[0].Tags())
	}

	// Destroy; destroying twice is fine; SetTags after is not.
	if err := b.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Destroy(ctx); err != nil {
		t.Fatalf("second destroy: %v", err)
	}
	if err := b.SetTags(ctx, cloud.Tags{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SetTags on destroyed: %v", err)
	}
	list, _ = d.Instances(ctx, nil)
	if want := []cloud.InstanceID{"ct-0001", "ct-0003"}; !reflect.DeepEqual(ids(list), want) {
		t.Fatalf("after destroy: %v", ids(list))
	}
	if want := []cloud.InstanceID{"ct-0001", "ct-0003"}; !reflect.DeepEqual(d.Live(), want) {
		t.Fatalf("Live: %v", d.Live())
	}
	st := d.Stats()
	if st.Creates != 3 || st.Created != 3 || st.Destroys != 2 || st.Destroyed != 1 || st.SetTags != 2 || st.Lists != 7 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := d.Executor(b); err != nil {
		t.Fatalf("Executor of destroyed instance: %v", err)
	}
	if _, err := d.ExecutorByID("ct-9999"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Executor of unknown: %v", err)
	}
	d.Stop()
}

func TestCreateErrors(t *testing.T) {
	ctx := context.Background()
	type check func(t *testing.T, err error)
	quota := func(t *testing.T, err error) {
		if !cloud.IsQuota(err) {
			t.Fatalf("want quota error, got %v", err)
		}
	}
	capacity := func(typ string) check {
		return func(t *testing.T, err error) {
			ce, ok := cloud.AsCapacity(err)
			if !ok || ce.InstanceType != typ {
				t.Fatalf("want capacity error for %q, got %v", typ, err)
			}
		}
	}
	ok := func(t *testing.T, err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		opts  Options
		setup func(d *Driver)
		its   []cloud.InstanceType
		want  []check
	}{
		{"quota", Options{Quota: 2}, nil,
			[]cloud.InstanceType{small, large, small}, []check{ok, ok, quota}},
		{"quota via knob", Options{}, func(d *Driver) { d.Configure(func(f *Faults) { f.Quota = 1 }) },
			[]cloud.InstanceType{small, small}, []check{ok, quota}},
		{"capacity per type", Options{CapacityErrorTypes: []string{"t.large"}}, nil,
			[]cloud.InstanceType{large, small}, []check{capacity("t.large"), ok}},
		{"capacity via knob", Options{}, func(d *Driver) { d.Configure(func(f *Faults) { f.CapacityErrorTypes["t.small"] = true }) },
			[]cloud.InstanceType{small, large}, []check{capacity("t.small"), ok}},
		{"provider capacity", Options{ProviderCapacityError: true}, nil,
			[]cloud.InstanceType{small, large}, []check{capacity(""), capacity("")}},
		{"provider capacity via knob", Options{}, func(d *Driver) { d.Configure(func(f *Faults) { f.ProviderCapacityError = true }) },
			[]cloud.InstanceType{large}, []check{capacity("")}},
		{"capacity beats quota", Options{Quota: 1, CapacityErrorTypes: []string{"t.small"}}, nil,
			[]cloud.InstanceType{large, small, large}, []check{ok, capacity("t.small"), quota}},
		{"create error rate 1", Options{CreateErrorRate: 1}, nil,
			[]cloud.InstanceType{small}, []check{func(t *testing.T, err error) {
				if !errors.Is(err, ErrInjected) || cloud.ErrorKind(err) != "other" {
					t.Fatalf("want injected error, got %v", err)
				}
			}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newDriver(t, tc.opts)
			if tc.setup != nil {
				tc.setup(d)
			}
			for i, it := range tc.its {
				_, err := d.Create(ctx, it, nil)
				tc.want[i](t, err)
			}
		})
	}

	// Quota counts live instances: destroying one frees a slot.
	d, _ := newDriver(t, Options{Quota: 1})
	a := mustCreate(t, d, small, nil)
	if _, err := d.Create(ctx, small, nil); !cloud.IsQuota(err) {
		t.Fatalf("want quota, got %v", err)
	}
	if err := a.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, d, small, nil)
	if st := d.Stats(); st.Creates != 3 || st.CreateErrors != 1 || st.Created != 2 {
		t.Fatalf("stats %+v", st)
	}
	// Turning capacity off again works.
	d.Configure(func(f *Faults) { f.Quota = 0 })
	d.Configure(func(f *Faults) { f.CapacityErrorTypes["t.small"] = true })
	if _, err := d.Create(ctx, small, nil); err == nil {
		t.Fatal("want capacity error")
	}
	d.Configure(func(f *Faults) { f.CapacityErrorTypes["t.small"] = false })
	mustCreate(t, d, small, nil)
}

func TestRateLimit(t *testing.T) {
	ctx := context.Background()
	d, clk := newDriver(t, Options{})
	a := mustCreate(t, d, small, nil)
	until := t0.Add(30 * time.Second)
	d.Configure(func(f *Faults) { f.RateLimitedUntil = until })

	calls := []struct {
		name string
		call func() error
	}{
		{"create", func() error { _, err := d.Create(ctx, small, nil); return err }},
		{"instances", func() error { _, err := d.Instances(ctx, nil); return err }},
		{"settags", func() error { return a.SetTags(ctx, cloud.Tags{"k": "v"}) }},
		{"destroy", func() error { return a.Destroy(ctx) }},
	}
	for _, step := range []struct {
		advance time.Duration
		limited bool
	}{{0, true}, {29 * time.Second, true}, {time.Second, false}} {
		clk.Advance(step.advance)
		for _, c := range calls {
			err := c.call()
			rl, ok := cloud.AsRateLimit(err)
			if ok != step.limited {
				t.Fatalf("at %v %s: %v (want limited=%v)", clk.Now().Sub(t0), c.name, err, step.limited)
			}
			if ok && !rl.RetryAfter.Equal(until) {
				t.Fatalf("RetryAfter %v want %v", rl.RetryAfter, until)
			}
			if !ok && err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
	}
	if st := d.Stats(); st.RateLimited != 8 {
		t.Fatalf("RateLimited = %d", st.RateLimited)
	}

	// RateLimitRate 1 with RateLimitFor: the first call starts a period.
	d2, clk2 := newDriver(t, Options{RateLimitRate: 1, RateLimitFor: 5 * time.Second})
	_, err := d2.Instances(ctx, nil)
	rl, ok := cloud.AsRateLimit(err)
	if !ok || !rl.RetryAfter.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("got %v", err)
	}
	clk2.Advance(4 * time.Second)
	if _, err := d2.Instances(ctx, nil); err == nil {
		t.Fatal("want still rate limited")
	} else if rl, _ := cloud.AsRateLimit(err); !rl.RetryAfter.Equal(t0.Add(5 * time.Second)) {
		t.Fatalf("RetryAfter moved: %v", rl.RetryAfter)
	}
	clk2.Advance(time.Second)
	d2.Configure(func(f *Faults) { f.RateLimitRate = 0 })
	if _, err := d2.Instances(ctx, nil); err != nil {
		t.Fatalf("after period: %v", err)
	}
	// Default RateLimitFor is 10s.
	d3, _ := newDriver(t, Options{RateLimitRate: 1})
	_, err = d3.Create(ctx, small, nil)
	if rl, ok := cloud.AsRateLimit(err); !ok || !rl.RetryAfter.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("got %v", err)
	}
}

func TestExecutorFaults(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts Options
		// act runs after creating the instance, before advancing the clock
		act     func(d *Driver, inst cloud.Instance)
		advance time.Duration
		wantOK  bool
		wantMsg string
	}{
		{"up", Options{}, nil, 0, true, ""},
		{"booting", Options{BootDelay: 10 * time.Second}, nil, 9 * time.Second, false, "connection refused"},
		{"booted", Options{BootDelay: 10 * time.Second}, nil, 10 * time.Second, true, ""},
		{"broken rate", Options{BrokenRate: 1}, nil, 0, false, "handshake failed"},
		{"break", Options{}, func(d *Driver, i cloud.Instance) { d.Break(i.ID()) }, 0, false, "handshake failed"},
		{"unbreak", Options{BrokenRate: 1}, func(d *Driver, i cloud.Instance) { d.Unbreak(i.ID()) }, 0, true, ""},
		{"vanish", Options{}, func(d *Driver, i cloud.Instance) { d.Vanish(i.ID()) }, 0, false, "no route"},
		{"destroyed", Options{}, func(d *Driver, i cloud.Instance) { _ = i.Destroy(ctx) }, 0, false, "no route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, clk := newDriver(t, tc.opts)
			inst := mustCreate(t, d, small, nil)
			ex, err := d.Executor(inst)
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Close()
			if tc.act != nil {
				tc.act(d, inst)
			}
			clk.Advance(tc.advance)
			for _, line := range []string{"true", "/tmp/r runner list"} {
				out, _, err := ex.Execute(ctx, line, nil)
				if tc.wantOK {
					if err != nil || len(out) != 0 {
						t.Fatalf("%q: out %q err %v", line, out, err)
					}
					continue
				}
				var ee *runner.ExitError
				if err == nil || errors.As(err, &ee) || !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("%q: want unreachable error containing %q, got %v", line, tc.wantMsg, err)
				}
				if !strings.Contains(err.Error(), inst.Address()) {
					t.Fatalf("error does not name address: %v", err)
				}
				if !errors.Is(err, runner.ErrNotSent) {
					t.Fatalf("a refused connection must say the command was not sent: %v", err)
				}
			}
		})
	}
}

func TestVanish(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t, Options{})
	a := mustCreate(t, d, small, nil)
	b := mustCreate(t, d, small, nil)
	cl := &runner.Client{Exec: mustExec(t, d, a), Path: "/r"}
	if err := cl.Start(ctx, runner.Spec{ID: "c1", Command: []string{"sleep", "100"}}); err != nil {
		t.Fatal(err)
	}
	d.Vanish(a.ID())
	d.Vanish(a.ID()) // no-op
	got, err := d.Instances(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ids(got), []cloud.InstanceID{b.ID()}) {
		t.Fatalf("listing %v", ids(got))
	}
	if d.RunningOn(a.ID()) != nil {
		t.Fatal("containers survived vanish")
	}
	if err := a.Destroy(ctx); err != nil {
		t.Fatalf("destroy vanished: %v", err)
	}
	if st := d.Stats(); st.Vanished != 1 {
		t.Fatalf("stats %+v", st)
	}

	// VanishRate 1: every live instance vanishes at the next listing.
	d2, _ := newDriver(t, Options{VanishRate: 1})
	mustCreate(t, d2, small, nil)
	mustCreate(t, d2, small, nil)
	got, err = d2.Instances(ctx, nil)
	if err != nil || len(got) != 0 || len(d2.Live()) != 0 {
		t.Fatalf("got %v %v live %v", ids(got), err, d2.Live())
	}
}

func TestVanishFraction(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		fraction float64
		want     int // of 200 instances, vanished within VanishWithin
	}{
		{"none", 0, 0},
		{"all", 1, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, clk := newDriver(t, Options{Seed: 1, VanishFraction: tc.fraction, VanishWithin: 10 * time.Minute})
			for range 200 {
				mustCreate(t, d, small, nil)
			}
			if got, _ := d.Instances(ctx, nil); tc.fraction < 1 && len(got) != 200 {
				t.Fatalf("%d listed at once", len(got))
			}
			clk.Advance(10 * time.Minute)
			got, err := d.Instances(ctx, nil)
			if err != nil || 200-len(got) != tc.want || d.Stats().Vanished != tc.want {
				t.Fatalf("after VanishWithin: %d listed (%v), %d vanished; want %d vanished", len(got), err, d.Stats().Vanished, tc.want)
			}
		})
	}
	// A fraction: exactly that many, spread over the window, each once.
	d, clk := newDriver(t, Options{Seed: 1, VanishFraction: 0.05, VanishWithin: 10 * time.Minute})
	for range 1000 {
		mustCreate(t, d, small, nil)
	}
	clk.Advance(5 * time.Minute)
	d.Instances(ctx, nil)
	half := d.Stats().Vanished
	clk.Advance(time.Hour)
	d.Instances(ctx, nil)
	d.Instances(ctx, nil)
	all := d.Stats().Vanished
	if all != 50 || half == 0 || half == all {
		t.Fatalf("5 %% of 1000: %d vanished in all, %d in the first half of the window", all, half)
	}
}

func TestVanishFractionPassesTheTurnOfADestroyedInstance(t *testing.T) {
	ctx := context.Background()
	d, clk := newDriver(t, Options{Seed: 1, VanishFraction: 0.5, VanishWithin: time.Minute})
	mustCreate(t, d, small, nil)
	chosen := mustCreate(t, d, small, nil) // the second of two at 0.5
	if err := chosen.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	third := mustCreate(t, d, small, nil) // takes the destroyed one's turn
	mustCreate(t, d, small, nil)          // and its own turn comes here
	clk.Advance(time.Minute)
	got, _ := d.Instances(ctx, nil)
	if st := d.Stats(); st.Vanished != 2 || len(got) != 1 || slices.Contains(ids(got), third.ID()) {
		t.Fatalf("%d vanished, listed %v; want 2 vanished, %s among them", st.Vanished, ids(got), third.ID())
	}
}

func TestForeignInstancesCountAgainstQuota(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t, Options{Quota: 3})
	d.Configure(func(f *Faults) { f.ForeignInstances = 2 })
	mustCreate(t, d, small, nil)
	var qe *cloud.QuotaError
	if _, err := d.Create(ctx, small, nil); !errors.As(err, &qe) {
		t.Fatalf("create with 1 own + 2 foreign at quota 3: %v", err)
	}
	if got, _ := d.Instances(ctx, nil); len(got) != 1 {
		t.Fatalf("listing shows %d instances, want only our 1", len(got))
	}
	d.Configure(func(f *Faults) { f.ForeignInstances = 0 })
	mustCreate(t, d, small, nil)
	if st := d.Stats(); st.QuotaErrors != 1 || st.CreateErrors != 1 || st.CapacityErrors != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func mustExec(t *testing.T, d *Driver, inst cloud.Instance) runner.Executor {
	t.Helper()
	ex, err := d.Executor(inst)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

func statusOf(t *testing.T, sts []runner.Status, id string) (runner.Status, bool) {
	t.Helper()
	for _, s := range sts {
		if s.ID == id {
			return s, true
		}
	}
	return runner.Status{}, false
}

func TestRunnerProtocol(t *testing.T) {
	ctx := context.Background()
	d, clk := newDriver(t, Options{RunnerHash: "abc123"})
	inst := mustCreate(t, d, small, nil)
	ex := mustExec(t, d, inst)
	cl := &runner.Client{Exec: ex, Path: "/tmp/dispatch-tui-runner"}

	v, err := cl.Version(ctx)
	if err != nil || v != "fake-runner abc123" {
		t.Fatalf("version %q %v", v, err)
	}

	start := func(id string, argv ...string) {
		t.Helper()
		if err := cl.Start(ctx, runner.Spec{ID: id, Command: argv}); err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
	}
	start("c-cmd", Cmd(5*time.Second, 3)...)
	start("c-true", "true")
	start("c-false", "/bin/false")
	start("c-sleep", "sleep", "2")
	start("c-forever", "some-daemon")
	start("c-term", "some-daemon")
	start("c-ign", append(Cmd(time.Hour, 0), IgnoreTerm)...)
	start("c-ignkill", "some-daemon", IgnoreTerm)

	// Duplicates, bad specs.
	err = cl.Start(ctx, runner.Spec{ID: "c-true", Command: []string{"true"}})
	if ee := exitCode(err); ee != 1 || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("duplicate start: %v", err)
	}
	for _, tc := range []struct {
		name  string
		line  string
		stdin string
	}{
		{"bad json", "/r runner start x1", "{"},
		{"empty command", "/r runner start x1", `{"id":"x1","command":[]}`},
		{"id mismatch", "/r runner start x1", `{"id":"x2","command":["true"]}`},
		{"bad verb", "/r runner frob", ""},
		{"bad id", "/r runner kill a/b", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, err := ex.Execute(ctx, tc.line, []byte(tc.stdin))
			if exitCode(err) != 2 || len(stderr) == 0 {
				t.Fatalf("want exit 2, got %v (stderr %q)", err, stderr)
			}
		})
	}

	if got := d.RunningOn(inst.ID()); !reflect.DeepEqual(got, []string{"c-cmd", "c-forever", "c-ign", "c-ignkill", "c-sleep", "c-term"}) {
		t.Fatalf("RunningOn %v", got)
	}

	clk.Advance(time.Second)
	if err := cl.Kill(ctx, "c-term", runner.SignalTerm); err != nil {
		t.Fatal(err)
	}
	if err := cl.Kill(ctx, "c-ign", runner.SignalTerm); err != nil {
		t.Fatal(err)
	}
	if err := cl.Kill(ctx, "c-ignkill", runner.SignalKill); err != nil {
		t.Fatal(err)
	}
	if err := cl.Kill(ctx, "nope", runner.SignalKill); exitCode(err) != 1 || !strings.Contains(err.Error(), "no such container") {
		t.Fatalf("kill unknown: %v", err)
	}
	clk.Advance(4 * time.Second) // t0+5s

	sts, err := cl.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var gotIDs []string
	for _, s := range sts {
		gotIDs = append(gotIDs, s.ID)
	}
	wantIDs := []string{"c-cmd", "c-false", "c-forever", "c-ign", "c-ignkill", "c-sleep", "c-term", "c-true"}
	if !reflect.DeepEqual(gotIDs, wantIDs) {
		t.Fatalf("list ids %v", gotIDs)
	}
	for _, tc := range []struct {
		id       string
		state    string
		code     int
		finished time.Duration // from t0; ignored when running
	}{
		{"c-cmd", runner.StateExited, 3, 5 * time.Second},
		{"c-true", runner.StateExited, 0, 0},
		{"c-false", runner.StateExited, 1, 0},
		{"c-sleep", runner.StateExited, 0, 2 * time.Second},
		{"c-forever", runner.StateRunning, 0, 0},
		{"c-term", runner.StateExited, ExitTerm, time.Second},
		{"c-ign", runner.StateRunning, 0, 0},
		{"c-ignkill", runner.StateExited, ExitKill, time.Second},
	} {
		t.Run("list "+tc.id, func(t *testing.T) {
			s, ok := statusOf(t, sts, tc.id)
			if !ok {
				t.Fatal("missing")
			}
			if s.State != tc.state || s.ExitCode != tc.code || !s.StartedAt.Equal(t0) || s.PID == 0 {
				t.Fatalf("status %+v", s)
			}
			if tc.state == runner.StateExited && !s.FinishedAt.Equal(t0.Add(tc.finished)) {
				t.Fatalf("finished %v want %v", s.FinishedAt, t0.Add(tc.finished))
			}
			if tc.state == runner.StateRunning && !s.FinishedAt.IsZero() {
				t.Fatalf("running with finished_at %v", s.FinishedAt)
			}
		})
	}

	// KILL overrides ignore-term; killing an exited container changes nothing.
	if err := cl.Kill(ctx, "c-ign", runner.SignalKill); err != nil {
		t.Fatal(err)
	}
	if err := cl.Kill(ctx, "c-cmd", runner.SignalKill); err != nil {
		t.Fatal(err)
	}
	sts, _ = cl.List(ctx)
	if s, _ := statusOf(t, sts, "c-ign"); s.State != runner.StateExited || s.ExitCode != ExitKill || !s.FinishedAt.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("c-ign %+v", s)
	}
	if s, _ := statusOf(t, sts, "c-cmd"); s.ExitCode != 3 || !s.FinishedAt.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("c-cmd %+v", s)
	}

	// Logs.
	logs, err := cl.Logs(ctx, "c-cmd", 0, 0)
	if err != nil || string(logs.Data) != "fake: c-cmd running fake-run 5s 3\nfake: c-cmd exited 3\n" {
		t.Fatalf("logs %q %v", logs.Data, err)
	}
	logs, err = cl.Logs(ctx, "c-cmd", 1, 0)
	if err != nil || string(logs.Data) != "fake: c-cmd exited 3\n" {
		t.Fatalf("logs tail %q %v", logs.Data, err)
	}
	if _, err := cl.Logs(ctx, "nope", 0, 0); exitCode(err) != 1 {
		t.Fatalf("logs unknown: %v", err)
	}

	// Forget.
	if err := cl.Forget(ctx, "c-forever"); exitCode(err) != 1 {
		t.Fatalf("forget running: %v", err)
	}
	if err := cl.Forget(ctx, "c-cmd"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Forget(ctx, "c-cmd"); exitCode(err) != 1 {
		t.Fatalf("forget twice: %v", err)
	}
	sts, _ = cl.List(ctx)
	if _, ok := statusOf(t, sts, "c-cmd"); ok {
		t.Fatal("forgotten container still listed")
	}
	// A forgotten id can be started again.
	start("c-cmd", "true")
	if n := d.StartCount("c-cmd"); n != 2 {
		t.Fatalf("StartCount %d", n)
	}
	if n := d.StartCount("c-true"); n != 1 {
		t.Fatalf("StartCount c-true %d", n)
	}
	st := d.Stats()
	if st.Starts != 9 || st.Kills != 5 {
		t.Fatalf("stats %+v", st)
	}

	// Destroy: containers are gone.
	if err := inst.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.List(ctx); err == nil || exitCode(err) != -1 {
		t.Fatalf("list on destroyed: %v", err)
	}
	if d.RunningOn(inst.ID()) != nil || d.Containers(inst.ID()) != nil {
		t.Fatal("containers on destroyed instance")
	}
}

// exitCode returns err's ExitError code, -1 if none, 0 for nil.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *runner.ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return -1
}

func TestInstallAndShell(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t, Options{})
	inst := mustCreate(t, d, small, nil)
	ex := mustExec(t, d, inst)
	path := "/tmp/dispatch-tui-runner~deadbeef"
	cl := &runner.Client{Exec: ex, Path: path}
	if v, _ := cl.Version(ctx); v != "fake-runner 0" {
		t.Fatalf("default version %q", v)
	}
	bin := []byte("binary")
	if _, _, err := ex.Execute(ctx, runner.InstallLine(path, int64(len(bin))), bin); err != nil {
		t.Fatal(err)
	}
	// sha256("binary")
	const want = "fake-runner 9a3a45d01531a20e89ac6ae10b0b0beb0492acd7216a368aa062d1a5fecaf9cd"
	if v, _ := cl.Version(ctx); v != want {
		t.Fatalf("installed version %q", v)
	}
	if _, _, err := ex.Execute(ctx, "false", nil); exitCode(err) != 1 {
		t.Fatalf("false: %v", err)
	}
	if _, _, err := ex.Execute(ctx, "echo hi", nil); err != nil {
		t.Fatalf("echo: %v", err)
	}
	if d.Stats().Installs != 1 {
		t.Fatalf("stats %+v", d.Stats())
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := ex.Execute(cctx, "true", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
}

// A lost reply: the start ran on the instance, the caller got a transport
// error that does not claim the command was not sent.
func TestLostReply(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t, Options{LostReplyRate: 1})
	inst := mustCreate(t, d, small, nil)
	cl := &runner.Client{Exec: mustExec(t, d, inst), Path: "/r"}
	err := cl.Start(ctx, runner.Spec{ID: "c1", Command: []string{"daemon"}})
	var ee *runner.ExitError
	if err == nil || errors.As(err, &ee) || errors.Is(err, runner.ErrNotSent) || !errors.Is(err, ErrUnreachable) {
		t.Fatalf("lost reply: got %v", err)
	}
	d.Configure(func(f *Faults) { f.LostReplyRate = 0 })
	sts, err := cl.List(ctx)
	if err != nil || len(sts) != 1 || sts[0].ID != "c1" || sts[0].State != runner.StateRunning {
		t.Fatalf("the start ran anyway: list %+v err %v", sts, err)
	}
	if d.StartCount("c1") != 1 || d.Stats().LostReplies != 1 {
		t.Fatalf("start count %d, lost replies %d", d.StartCount("c1"), d.Stats().LostReplies)
	}

	// A lost request: the same kind of error, but nothing ran.
	d.Configure(func(f *Faults) { f.LostRequestRate = 1 })
	err = cl.Start(ctx, runner.Spec{ID: "c2", Command: []string{"daemon"}})
	if err == nil || errors.As(err, &ee) || errors.Is(err, runner.ErrNotSent) || !errors.Is(err, ErrUnreachable) {
		t.Fatalf("lost request: got %v", err)
	}
	d.Configure(func(f *Faults) { f.LostRequestRate = 0 })
	if d.StartCount("c2") != 0 || d.Stats().LostRequests != 1 {
		t.Fatalf("start count %d, lost requests %d", d.StartCount("c2"), d.Stats().LostRequests)
	}
}

func TestRunnerCrash(t *testing.T) {
	ctx := context.Background()
	d, clk := newDriver(t, Options{RunnerCrashRate: 1})
	inst := mustCreate(t, d, small, nil)
	cl := &runner.Client{Exec: mustExec(t, d, inst), Path: "/r"}
	for _, s := range []runner.Spec{
		{ID: "short", Command: Cmd(10*time.Second, 0)},
		{ID: "forever", Command: []string{"daemon"}},
		{ID: "instant", Command: []string{"true"}},
		{ID: "killed", Command: []string{"daemon"}},
	} {
		if err := cl.Start(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(500 * time.Millisecond)
	if err := cl.Kill(ctx, "killed", runner.SignalKill); err != nil {
		t.Fatal(err)
	}
	listIDs := func() []string {
		sts, err := cl.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range sts {
			out = append(out, s.ID)
		}
		return out
	}
	for _, step := range []struct {
		advance time.Duration
		want    []string
	}{
		{0, []string{"forever", "instant", "killed", "short"}},
		{500 * time.Millisecond, []string{"instant", "killed", "short"}}, // forever gone at 1s
		{3999 * time.Millisecond, []string{"instant", "killed", "short"}},
		{time.Millisecond, []string{"instant", "killed"}}, // short gone at 5s
	} {
		clk.Advance(step.advance)
		if got := listIDs(); !reflect.DeepEqual(got, step.want) {
			t.Fatalf("at %v: %v want %v", clk.Now().Sub(t0), got, step.want)
		}
	}
	// A crashed id can be started again.
	if err := cl.Start(ctx, runner.Spec{ID: "short", Command: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	if n := d.StartCount("short"); n != 2 {
		t.Fatalf("StartCount %d", n)
	}
	// CrashRunner wipes everything.
	d.CrashRunner(inst.ID())
	if got := listIDs(); got != nil {
		t.Fatalf("after CrashRunner: %v", got)
	}
	if d.Stats().Crashed != 2+3 {
		t.Fatalf("stats %+v", d.Stats())
	}
}

// trace records the outcome of a fixed sequence of calls.
func trace(seed int64) string {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	d := New(Options{Clock: clk,
		Seed: seed, CreateErrorRate: 0.3, DestroyErrorRate: 0.3, RateLimitRate: 0.1,
		RateLimitFor: time.Second, BrokenRate: 0.3, RunnerCrashRate: 0.5, VanishRate: 0.05,
	})
	var b strings.Builder
	for i := 0; i < 200; i++ {
		clk.Advance(time.Second)
		inst, err := d.Create(ctx, small, nil)
		fmt.Fprintf(&b, "c%d:%s ", i, cloud.ErrorKind(err))
		if err == nil {
			ex, _ := d.Executor(inst)
			_, _, err := ex.Execute(ctx, "true", nil)
			fmt.Fprintf(&b, "x:%v ", err != nil)
			if err == nil {
				err = (&runner.Client{Exec: ex, Path: "/r"}).Start(ctx, runner.Spec{ID: "c", Command: Cmd(4*time.Second, 0)})
				fmt.Fprintf(&b, "s:%v ", err != nil)
			}
		}
		list, err := d.Instances(ctx, nil)
		fmt.Fprintf(&b, "l:%s:%d ", cloud.ErrorKind(err), len(list))
		if i%3 == 0 && len(list) > 0 {
			fmt.Fprintf(&b, "d:%s ", cloud.ErrorKind(list[0].Destroy(ctx)))
		}
	}
	for _, id := range d.Live() {
		fmt.Fprintf(&b, "%s:%v ", id, d.RunningOn(id))
	}
	fmt.Fprintf(&b, "%+v", d.Stats())
	return b.String()
}

func TestSeededReproducible(t *testing.T) {
	a, b, c := trace(1), trace(1), trace(2)
	if a != b {
		t.Fatalf("same seed, different traces:\n%s\n%s", a, b)
	}
	if a == c {
		t.Fatal("different seeds gave identical traces")
	}

	// Rates are roughly honoured.
	ctx := context.Background()
	d, _ := newDriver(t, Options{Seed: 7, CreateErrorRate: 0.25})
	fails := 0
	for i := 0; i < 2000; i++ {
		if _, err := d.Create(ctx, small, nil); err != nil {
			fails++
		}
	}
	if fails < 400 || fails > 600 {
		t.Fatalf("create errors %d/2000 at rate 0.25", fails)
	}
	d.Configure(func(f *Faults) { f.CreateErrorRate = 0 })
	d.Configure(func(f *Faults) { f.DestroyErrorRate = 1 })
	inst := mustCreate(t, d, small, nil)
	if err := inst.Destroy(ctx); !errors.Is(err, ErrInjected) {
		t.Fatalf("destroy: %v", err)
	}
	if st := d.Stats(); st.DestroyErrors != 1 || st.CreateErrors != fails {
		t.Fatalf("stats %+v", st)
	}
}

func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	d, clk := newDriver(t, Options{Seed: 3, CreateErrorRate: 0.2, RunnerCrashRate: 0.2, VanishRate: 0.01})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				clk.Advance(time.Millisecond)
				inst, err := d.Create(ctx, small, cloud.Tags{"g": fmt.Sprint(g)})
				if err != nil {
					continue
				}
				ex, _ := d.Executor(inst)
				cl := &runner.Client{Exec: ex, Path: "/r"}
				_ = cl.Start(ctx, runner.Spec{ID: fmt.Sprintf("c%d-%d", g, i), Command: Cmd(time.Millisecond, 0)})
				_, _ = cl.List(ctx)
				_ = inst.SetTags(ctx, cloud.Tags{"g": "x"})
				_ = inst.Tags()
				list, _ := d.Instances(ctx, cloud.Tags{"g": "x"})
				if len(list) > 0 {
					_ = list[len(list)-1].Destroy(ctx)
				}
				_ = d.RunningOn(inst.ID())
				_ = d.Stats()
				_ = d.Live()
			}
		}(g)
	}
	wg.Wait()
}

// "runner batch" answers each request as its single verb would.
func TestRunnerBatch(t *testing.T) {
	ctx := context.Background()
	d, clk := newDriver(t, Options{})
	inst := mustCreate(t, d, small, nil)
	cl := &runner.Client{Exec: mustExec(t, d, inst), Path: "/r"}
	errs, err := cl.StartMany(ctx, []runner.Spec{
		{ID: "a", Command: []string{"true"}},
		{ID: "b", Command: []string{"daemon"}},
		{ID: "a", Command: []string{"true"}}, // a second start of a
	})
	if err != nil {
		t.Fatal(err)
	}
	var ee *runner.ExitError
	if errs[0] != nil || errs[1] != nil || !errors.As(errs[2], &ee) || ee.Code != 1 {
		t.Fatalf("start replies: %v", errs)
	}
	clk.Advance(time.Second)
	replies, err := cl.Batch(ctx, []runner.Request{
		{Verb: "list"},
		{Verb: "kill", ID: "b", Signal: runner.SignalKill},
		{Verb: "forget", ID: "a"},
		{Verb: "forget", ID: "nope"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sts, err := runner.ParseList(replies[0].Stdout)
	if err != nil || len(sts) != 2 || sts[0].ID != "a" || sts[0].State != runner.StateExited || sts[1].State != runner.StateRunning {
		t.Fatalf("list reply: %+v %v", sts, err)
	}
	if replies[1].Code != 0 || replies[2].Code != 0 || replies[3].Code != 1 {
		t.Fatalf("replies: %+v", replies)
	}
	after, err := cl.List(ctx)
	if err != nil || len(after) != 1 || after[0].ID != "b" || after[0].State != runner.StateExited {
		t.Fatalf("after kill and forget: %+v %v", after, err)
	}
}

// "echo" exits 0 at once and its words are a line of its log, as with a
// real runner: what "dispatch-tui cloudtest" runs on every driver.
func TestEchoWritesItsWords(t *testing.T) {
	ctx := context.Background()
	d, _ := newDriver(t, Options{})
	inst := mustCreate(t, d, small, nil)
	cl := &runner.Client{Exec: mustExec(t, d, inst), Path: "/r"}
	if err := cl.Start(ctx, runner.Spec{ID: "e1", Command: []string{"echo", "hello", "there"}}); err != nil {
		t.Fatal(err)
	}
	sts, err := cl.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 1 || sts[0].State != runner.StateExited || sts[0].ExitCode != 0 {
		t.Fatalf("list %+v, want e1 exited 0", sts)
	}
	logs, err := cl.Logs(ctx, "e1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if out := logs.Data; !slices.Contains(strings.Split(string(out), "\n"), "hello there") {
		t.Fatalf("logs %q lack the line %q", out, "hello there")
	}
}
