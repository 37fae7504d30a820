package engine

import (
	"math"
	"reflect"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/cost"
	"dispatch-tui/engine/queue"
)

// costTypes: c2 fits the small containers, c8 those of more than 2 vCPUs
// (4x the price: past the price factor, so never picked for a small one).
var costTypes = []cloud.InstanceType{
	{Name: "c2", ProviderType: "c2", VCPUs: 2, RAM: 8 * gib, Scratch: 10 * gib, Price: 0.80},
	{Name: "c8", ProviderType: "c8", VCPUs: 8, RAM: 16 * gib, Scratch: 10 * gib, Price: 3.20},
}

func label(k, v string) specOpt {
	return func(s *queue.Spec) { s.Labels = map[string]string{k: v} }
}

// at walks the clock a minute a step to start plus d (so that probes stay
// fresh), then steps without moving it until cond holds: every change the
// ledger sees happens at d, which it sees in a last step after cond holds.
func (h *harness) at(start time.Time, d time.Duration, what string, cond func() bool) {
	h.t.Helper()
	for next := h.clk.Now().Add(time.Minute); next.Before(start.Add(d)); next = next.Add(time.Minute) {
		h.clk.Set(next)
		h.eng.Step()
		h.eng.Settle()
	}
	h.clk.Set(start.Add(d))
	// One step first, so that what is due at d (a listing) is done before
	// cond's change: a destroy then waits for the next minute's listing.
	h.eng.Step()
	h.eng.Settle()
	for range 40 {
		if cond() {
			// The ledger samples the pool at the start of a step.
			h.eng.Step()
			h.eng.Settle()
			return
		}
		h.eng.Step()
		h.eng.Settle()
	}
	h.t.Fatalf("at %v: %s did not happen\ninstances: %+v\ncontainers: %s", d, what, h.eng.Instances(), h.dumpContainers())
}

func cents(x float64) int64 { return int64(math.Round(x * 100)) }

// wantCents fails unless got rounds to the same cent as want.
func wantCents(t *testing.T, what string, got, want float64) {
	t.Helper()
	if cents(got) != cents(want) {
		t.Errorf("%s: $%.6f, want $%.6f", what, got, want)
	}
}

// TestCostLedgerScenario is a known schedule on the fake driver and clock,
// its costs worked out by hand (docs/design.md §6.1), with a restart of
// the dispatcher in the middle:
//
//	0m   A (genomics, 2 vCPU: share 1 of c2) submitted; I1 (c2, $0.80/h) boots
//	2m   I1 ready, A runs 30m
//	32m  A exits; I1 idle
//	35m  B (genomics, 1 vCPU 1 GiB: share .5) and C (physics, 1 vCPU 6 GiB:
//	     share .75) start on I1; D (no label, 4 vCPU: share .5 of c8)
//	     submitted, I2 (c8, $3.20/h) boots
//	37m  I2 ready, D runs 15m
//	40m  the dispatcher restarts
//	45m  C exits; 52m D exits, I2 idle; 55m B exits, I1 idle
//	62m  I2 drained: shut down; 63m gone
//	65m  I1 the same; 66m gone
func TestCostLedgerScenario(t *testing.T) {
	cfg := testConfig(t)
	cfg.InstanceTypes = costTypes
	cfg.Cloud.TimeoutIdle = 3 * time.Hour // instances go when drained
	cfg.Cloud.TimeoutProbe = 3 * time.Hour
	cfg.Cloud.TimeoutUnreachable = 3 * time.Hour
	cfg.Cloud.TimeoutBooting = time.Hour
	cfg.Dispatcher.StaleLockTimeout = 3 * time.Hour
	cfg.Dispatcher.MaxContainersPerInstance = 0 // pack by resources
	h := newHarness(t, cfg, fake.Options{BootDelay: 2 * time.Minute})
	t0 := h.clk.Now()
	m := time.Minute
	var i1, i2 string
	instanceOf := func(id string) string { return h.container(id).InstanceID }
	stateIs := func(id string, s queue.State) func() bool { return func() bool { return h.state(id) == s } }
	gone := func(inst *string) func() bool {
		return func() bool { _, ok := h.eng.Instance(*inst); return !ok }
	}
	instIs := func(inst *string, s string) func() bool {
		return func() bool { v, ok := h.eng.Instance(*inst); return ok && string(v.State) == s }
	}

	a := h.submit(30*m, 0, vcpus(2), ram(2*gib), label("team", "genomics"))
	h.at(t0, 0, "I1 booting", func() bool {
		for _, v := range h.eng.Instances() {
			if v.ID != "" && v.State == "booting" {
				i1 = string(v.ID)
				return true
			}
		}
		return false
	})
	h.at(t0, 2*m, "A running", stateIs(a, queue.Running))
	h.at(t0, 32*m, "A complete, I1 idle", func() bool { return h.state(a) == queue.Complete && instIs(&i1, "idle")() })
	h.at(t0, 35*m, "35m", func() bool { return true })
	b := h.submit(20*m, 0, vcpus(1), ram(gib), label("team", "genomics"))
	c := h.submit(10*m, 0, vcpus(1), ram(6*gib), label("team", "physics"))
	d := h.submit(15*m, 0, vcpus(4), ram(4*gib))
	h.at(t0, 35*m, "B and C running on I1, I2 booting", func() bool {
		if h.state(b) != queue.Running || h.state(c) != queue.Running || instanceOf(b) != i1 || instanceOf(c) != i1 {
			return false
		}
		for _, v := range h.eng.Instances() {
			if v.ID != "" && string(v.ID) != i1 && v.State == "booting" {
				i2 = string(v.ID)
				return true
			}
		}
		return false
	})
	h.at(t0, 37*m, "D running on I2", func() bool { return h.state(d) == queue.Running && instanceOf(d) == i2 })

	// At 40m: the projection, and the same report after a restart.
	h.at(t0, 40*m, "nothing", func() bool { return true })
	before := h.eng.Cost(cost.By{Label: "team"}, time.Time{})
	p := before.Projection
	wantCents(t, "rate at 40m", p.RatePerHour, 4.00)
	wantCents(t, "today at 40m", p.Today, 40.0/60*0.80+5.0/60*3.20)     // 0.80
	wantCents(t, "day at 40m", p.Day, 0.80+4.00*(11+20.0/60))           // 46.13
	wantCents(t, "month at 40m", p.Month, 0.80+4.00*(30*24+11+20.0/60)) // 2926.13
	h.restart()
	after := h.eng.Cost(cost.By{Label: "team"}, time.Time{})
	if !reflect.DeepEqual(after, before) {
		t.Errorf("after the restart the ledger says\n%+v\nbefore it\n%+v", after, before)
	}
	h.at(t0, 40*m, "I1 and I2 probed again", func() bool { return instIs(&i1, "running")() && instIs(&i2, "running")() })

	h.at(t0, 45*m, "C complete", stateIs(c, queue.Complete))
	h.at(t0, 52*m, "D complete, I2 idle", func() bool { return h.state(d) == queue.Complete && instIs(&i2, "idle")() })
	h.at(t0, 55*m, "B complete, I1 idle", func() bool { return h.state(b) == queue.Complete && instIs(&i1, "idle")() })
	drain := func(inst string) func() bool {
		return func() bool {
			if _, err := h.eng.DrainInstance(inst, "test", "done"); err != nil {
				t.Fatal(err)
			}
			return true
		}
	}
	h.at(t0, 62*m, "drain I2", drain(i2))
	h.at(t0, 62*m, "I2 shut down", instIs(&i2, "shutdown"))
	h.at(t0, 63*m, "I2 gone", gone(&i2))
	h.at(t0, 65*m, "drain I1", drain(i1))
	h.at(t0, 65*m, "I1 shut down", instIs(&i1, "shutdown"))
	h.at(t0, 66*m, "I1 gone", gone(&i1))
	h.clk.Set(t0.Add(90 * m))

	// By hand. c2 costs 0.80/60 a minute, c8 3.20/60.
	c2, c8 := 0.80/60, 3.20/60
	wantA := 2*c2 + 30*c2           // I1's boot (created for A) and its run
	wantB := 10*c2*0.5/1.25 + 10*c2 // shared with C by .5:.75, then alone
	wantC := 10 * c2 * 0.75 / 1.25  //
	wantD := 2*c8 + 15*c8           // I2's boot and its run
	costs := h.eng.ContainerCosts([]string{a, b, c, d})
	for _, x := range []struct {
		name, id string
		want     float64
	}{{"A", a, wantA}, {"B", b, wantB}, {"C", c, wantC}, {"D", d, wantD}} {
		wantCents(t, "container "+x.name, costs[x.id], x.want)
	}

	rep := h.eng.Cost(cost.By{Label: "team"}, time.Time{})
	wantCents(t, "bill", rep.Bill, 66*c2+28*c8) // 0.88 + 1.49
	groups := map[string]float64{}
	for _, g := range rep.Groups {
		groups[g.Key] = g.Dollars
	}
	wantCents(t, "team=genomics", groups["genomics"], wantA+wantB) // 0.61
	wantCents(t, "team=physics", groups["physics"], wantC)         // 0.08
	wantCents(t, "no team", groups[cost.NoValue], wantD)           // 0.91
	if len(groups) != 3 {
		t.Errorf("groups %v, want genomics, physics and %s", groups, cost.NoValue)
	}

	waste := map[cost.TypeKind]cost.Waste{}
	for _, w := range rep.Waste {
		waste[cost.TypeKind{Type: w.Type, Kind: w.Kind}] = w
	}
	for _, x := range []struct {
		tk   cost.TypeKind
		want float64
	}{
		{cost.TypeKind{Type: "c2", Kind: cost.Boot}, 2 * c2},
		{cost.TypeKind{Type: "c2", Kind: cost.Idle}, (3 + 10) * c2},
		{cost.TypeKind{Type: "c2", Kind: cost.Drain}, 1 * c2},
		{cost.TypeKind{Type: "c8", Kind: cost.Boot}, 2 * c8},
		{cost.TypeKind{Type: "c8", Kind: cost.Idle}, 10 * c8},
		{cost.TypeKind{Type: "c8", Kind: cost.Drain}, 1 * c8},
	} {
		w := waste[x.tk]
		wantCents(t, "waste "+x.tk.Type+" "+string(x.tk.Kind), w.Dollars, x.want)
		if math.Abs(w.Share-x.want/rep.Bill) > 1e-9 {
			t.Errorf("waste %v: share %.4f of the bill, want %.4f", x.tk, w.Share, x.want/rep.Bill)
		}
	}
	if len(rep.Waste) != 6 {
		t.Errorf("waste lines %+v, want 6", rep.Waste)
	}
	p = rep.Projection
	wantCents(t, "rate at 90m", p.RatePerHour, 0)
	wantCents(t, "today at 90m", p.Today, 66*c2+28*c8)
	wantCents(t, "day at 90m", p.Day, 66*c2+28*c8)

	byType := h.eng.Cost(cost.By{Field: "type"}, time.Time{})
	types := map[string]float64{}
	for _, g := range byType.Groups {
		types[g.Key] = g.Dollars
	}
	wantCents(t, "containers on c2", types["c2"], wantA+wantB+wantC)
	wantCents(t, "containers on c8", types["c8"], wantD)

	// Since 50m: the part of each run after it.
	since := h.eng.Cost(cost.By{Label: "team"}, t0.Add(50*m))
	wantCents(t, "bill since 50m", since.Bill, 16*c2+13*c8)
}
