package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
)

// spotConfig has an on-demand small type and a cheaper preemptible one of
// the same size, and a preemptible large type that is dearer than medium.
func spotConfig(t *testing.T) *config.Config {
	cfg := testConfig(t)
	cfg.InstanceTypes = []cloud.InstanceType{
		{Name: "spot-small", ProviderType: "spot-small", VCPUs: 1, RAM: 2 * gib, Scratch: 10 * gib, Price: 0.3, Preemptible: true},
		{Name: "small", ProviderType: "small", VCPUs: 1, RAM: 2 * gib, Scratch: 10 * gib, Price: 1.0},
		{Name: "medium", ProviderType: "medium", VCPUs: 2, RAM: 4 * gib, Scratch: 20 * gib, Price: 1.4},
		{Name: "spot-large", ProviderType: "spot-large", VCPUs: 8, RAM: 32 * gib, Scratch: 100 * gib, Price: 1.6, Preemptible: true},
	}
	return cfg
}

func preemptible(b bool) specOpt { return func(s *queue.Spec) { s.Scheduling.Preemptible = &b } }

func TestPreemptiblePlacement(t *testing.T) {
	for _, tc := range []struct {
		name     string
		always   bool
		opts     []specOpt
		wantType string
		wantPre  bool
	}{
		{"true prefers the cheaper preemptible type", false, []specOpt{preemptible(true)}, "spot-small", true},
		{"false never goes on a preemptible type", false, []specOpt{preemptible(false)}, "small", false},
		{"omitted takes always_use_preemptible=false", false, nil, "small", false},
		{"omitted takes always_use_preemptible=true", true, nil, "spot-small", true},
		{"false overrides always_use_preemptible=true", true, []specOpt{preemptible(false)}, "small", false},
		{"true still takes an on-demand type when it is cheaper", false, []specOpt{preemptible(true), vcpus(2)}, "medium", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := spotConfig(t)
			cfg.Containers.AlwaysUsePreemptible = tc.always
			h := newHarness(t, cfg, fake.Options{})
			id := h.submit(5*time.Second, 0, tc.opts...)
			c := h.container(id)
			if c.Scheduling.Preemptible == nil || *c.Scheduling.Preemptible != tc.wantPre {
				t.Fatalf("stored scheduling.preemptible = %v, want %v (submit records what was decided)", c.Scheduling.Preemptible, tc.wantPre)
			}
			inst := h.runningOn(id, 30)
			if got := h.instance(inst).Type; got != tc.wantType {
				t.Fatalf("ran on a %s instance, want %s", got, tc.wantType)
			}
			if got, want := h.eng.Summary().PricePerHour, typePrice(cfg, tc.wantType); got != want {
				t.Fatalf("$/h = %v, want the %s type's price %v", got, tc.wantType, want)
			}
			h.until(id+" complete", 30, func() bool { return h.state(id) == queue.Complete })
		})
	}
}

func typePrice(cfg *config.Config, name string) float64 {
	for _, t := range cfg.InstanceTypes {
		if t.Name == name {
			return t.Price
		}
	}
	return -1
}

// A container that is not preemptible, when only preemptible types are big
// enough, is refused at submit (422), saying how to fix it.
func TestNonPreemptibleThatOnlyFitsPreemptibleTypesIsRefused(t *testing.T) {
	h := newHarness(t, spotConfig(t), fake.Options{})
	_, err := h.eng.Submit(queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 6, RAM: gib},
		Scheduling: queue.Scheduling{Preemptible: new(false)}}, "test")
	var nf *NoFitError
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "scheduling.preemptible = true") {
		t.Fatalf("submit: %v, want a NoFitError telling to set scheduling.preemptible", err)
	}
	if _, err := h.eng.Submit(queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 6, RAM: gib},
		Scheduling: queue.Scheduling{Preemptible: new(true)}}, "test"); err != nil {
		t.Fatalf("the same container, preemptible: %v", err)
	}
}

// A spot interruption, reported by the driver or seen as a preemptible
// instance vanishing, requeues its containers without spending an
// attempt: a container allowed one attempt still completes.
func TestSpotInterruptionRequeuesWithoutSpendingAnAttempt(t *testing.T) {
	for _, how := range []string{"interrupt", "vanish"} {
		t.Run(how, func(t *testing.T) {
			h := newHarness(t, spotConfig(t), fake.Options{BootDelay: 2 * time.Second})
			id := h.submit(20*time.Second, 0, preemptible(true), maxAttempts(1))
			first := h.runningOn(id, 30)
			if h.instance(first).Type != "spot-small" {
				t.Fatalf("setup: on %s", h.instance(first).Type)
			}
			h.step(2)
			if how == "interrupt" {
				h.cloud.Interrupt(cloud.InstanceID(first), "")
			} else {
				h.cloud.Vanish(cloud.InstanceID(first))
			}
			h.until(id+" requeued", 30, func() bool {
				c := h.container(id)
				return c.State != queue.Running || c.InstanceID != first
			})
			c := h.container(id)
			if c.State == queue.Cancelled || c.Attempts != 0 {
				t.Fatalf("after the interruption: %s, %d attempts (%q); want requeued with no attempt spent", c.State, c.Attempts, c.Reason)
			}
			if ev := h.eventsOf(id); !strings.Contains(ev, "was interrupted (spot)") {
				t.Fatalf("container events lack the interruption: %s", ev)
			}
			// The pool records the instance's event when its listing shows it
			// gone, which may come a step after the requeue.
			h.until(first+"'s "+worker.EventPreempted+" event", 30, func() bool {
				return strings.Contains(h.eventsOf(first), worker.EventPreempted)
			})
			second := h.runningOn(id, 60)
			if second == first {
				t.Fatalf("restarted on the interrupted instance %s", first)
			}
			h.until(id+" complete", 60, func() bool { return h.state(id) == queue.Complete })
			if c := h.container(id); c.Attempts != 1 {
				t.Fatalf("completed after %d attempts, want 1", c.Attempts)
			}
			h.until("interrupted instance gone", 60, func() bool { return !slices.Contains(h.live(), cloud.InstanceID(first)) })
			if n := h.cloud.StartCount(id); n != 2 {
				t.Fatalf("started %d times, want 2 (one per instance)", n)
			}
			if n := h.preempted.Load(); n != 1 {
				t.Fatalf("passes counted %d preempted containers, want 1 (dispatch_tui_containers_preempted_total)", n)
			}
		})
	}
}

// An on-demand instance that vanishes is no interruption: the attempt
// counts, as before.
func TestOnDemandInstanceVanishingSpendsTheAttempt(t *testing.T) {
	h := newHarness(t, spotConfig(t), fake.Options{})
	id := h.submit(20*time.Second, 0, preemptible(false), maxAttempts(1))
	inst := h.runningOn(id, 30)
	h.step(2)
	h.cloud.Vanish(cloud.InstanceID(inst))
	h.until(id+" cancelled", 30, func() bool { return h.state(id) == queue.Cancelled })
	if c := h.container(id); c.ReasonCode != queue.ReasonMaxAttempts {
		t.Fatalf("reason %s %q, want MAX_ATTEMPTS", c.ReasonCode, c.Reason)
	}
}

// A hold keeps the pool from shutting an instance down, not the provider
// from taking it back: an interrupted held instance goes, its container is
// requeued without an attempt spent, and the instance's view says
// preempted meanwhile.
func TestSpotInterruptionOfAHeldInstance(t *testing.T) {
	h := newHarness(t, spotConfig(t), fake.Options{})
	id := h.submit(-1, 0, preemptible(true), maxAttempts(1))
	inst := h.runningOn(id, 30)
	if _, err := h.eng.HoldInstance(inst, "test", "keep"); err != nil {
		t.Fatal(err)
	}
	h.cloud.Interrupt(cloud.InstanceID(inst), "capacity-rebalance")
	h.until(inst+" preempted", 20, func() bool {
		v, ok := h.eng.Instance(inst)
		return ok && v.Preempted && v.State == worker.StateShutdown
	})
	h.until(id+" requeued", 30, func() bool { return h.container(id).InstanceID != inst })
	if c := h.container(id); c.Attempts != 0 || c.State == queue.Cancelled {
		t.Fatalf("%s after %d attempts (%q), want requeued with none spent", c.State, c.Attempts, c.Reason)
	}
	if ev := h.eventsOf(id); !strings.Contains(ev, "instance "+inst+" was interrupted (spot): capacity-rebalance") {
		t.Fatalf("events: %s", ev)
	}
	h.until("interrupted instance gone", 30, func() bool { return !slices.Contains(h.live(), cloud.InstanceID(inst)) })
	h.runningOn(id, 60)
}

// An idle preemptible instance that vanishes held no container: it is
// an ordinary disappearance, not remembered as preempted.
func TestIdleSpotInstanceVanishingIsNoPreemption(t *testing.T) {
	h := newHarness(t, spotConfig(t), fake.Options{})
	inst := idleInstance(h, preemptible(true))
	h.cloud.Vanish(cloud.InstanceID(inst))
	h.until(inst+" removed", 30, func() bool { _, ok := h.eng.Instance(inst); return !ok })
	h.step(1) // the pool's events reach the log at the next step
	ev := h.eventsOf(inst)
	if strings.Contains(ev, worker.EventPreempted) || !strings.Contains(ev, worker.EventDisappeared) {
		t.Fatalf("events of %s: %s", inst, ev)
	}
	if why := h.eng.pool.PreemptedInstance(cloud.InstanceID(inst)); why != "" {
		t.Fatalf("remembered as preempted: %q", why)
	}
}
