package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
)

// Scenario tests of the scheduling rules of docs/design.md §5: no priority inversion at
// quota, labels, and the supervisor fraction.

func labels(kv ...string) specOpt {
	return func(s *queue.Spec) {
		s.Scheduling.Constraints = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			s.Scheduling.Constraints[kv[i]] = kv[i+1]
		}
	}
}

func supervisor(s *queue.Spec) { s.Scheduling.Supervisor = true }

// busySmalls fills max_instances with small instances, each running one
// container of priority 1 that ends after 20+i seconds (so they free up one
// by one), with more priority-1 containers queued behind them; it returns
// the queued ones.
func busySmalls(h *harness, n, queued int) []string {
	h.t.Helper()
	var first []string
	for i := range n {
		first = append(first, h.submit(time.Duration(20+2*i)*time.Second, 0, prio(1)))
	}
	for _, id := range first {
		h.runningOn(id, 60)
	}
	var rest []string
	for range queued {
		rest = append(rest, h.submit(30*time.Second, 0, prio(1)))
	}
	h.step(1)
	return rest
}

// startedSince returns those of ids started (any attempt) since counts were
// taken.
func startedSince(h *harness, ids []string, counts map[string]int) []string {
	var out []string
	for _, id := range ids {
		if h.cloud.StartCount(id) > counts[id] {
			out = append(out, id)
		}
	}
	return out
}

func startCounts(h *harness, ids []string) map[string]int {
	m := map[string]int{}
	for _, id := range ids {
		m[id] = h.cloud.StartCount(id)
	}
	return m
}

// typeCreates counts the live and past instances of one type the cloud made.
func typeCreates(h *harness, typ string) int {
	n := 0
	for _, e := range mustEvents(h) {
		if e.Kind == worker.EventCreate && strings.Contains(e.Reason, "created "+typ+" instance") {
			n++
		}
	}
	return n
}

// hasType reports whether the pool has an instance of type typ (a create
// in flight counts).
func hasType(h *harness, typ string) bool {
	for _, v := range h.eng.Instances() {
		if v.Type == typ {
			return true
		}
	}
	return false
}

func mustEvents(h *harness) []queue.Event {
	h.t.Helper()
	evs, err := h.eng.Events(0, 1<<30)
	if err != nil {
		h.t.Fatal(err)
	}
	return evs
}

// TestNoPriorityInversionAtQuota is the demo case of docs/design.md §5's rule: at
// max_instances 8, every instance a busy small one with priority-1
// containers queued behind, a priority-2 container needing large arrives.
// Within one container's run time a small instance is shut down for it and
// a large one created, and no priority-1 container starts meanwhile; the
// waiting ones say which container the slot is being freed for.
func TestNoPriorityInversionAtQuota(t *testing.T) {
	for _, tc := range []struct {
		name     string
		highPrio int
	}{
		{"higher priority", 2},
		// Equal priorities keep first-seen order: the large container
		// came after the busy ones but before the queued ones.
		{"equal priority, first seen first", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Dispatcher.MaxInstances = 8
			h := newHarness(t, cfg, fake.Options{BootDelay: 3 * time.Second})
			var queued []string
			if tc.highPrio == 1 {
				// The large one must be seen before the queued ones.
				queued = busySmalls(h, 8, 0)
			} else {
				queued = busySmalls(h, 8, 6)
			}
			large := h.submit(-1, 0, prio(tc.highPrio), ram(20*gib))
			if tc.highPrio == 1 {
				h.step(1)
				for range 6 {
					queued = append(queued, h.submit(30*time.Second, 0, prio(1)))
				}
			}
			counts := startCounts(h, queued)
			submitted := 0
			sawFreeing := false
			h.until("large instance created", 60, func() bool {
				submitted++
				for _, id := range queued {
					if c := h.container(id); c.ReasonCode == queue.ReasonFreeing {
						if !strings.Contains(c.Reason, "freeing an instance for "+large+" (priority "+fmt.Sprint(tc.highPrio)+")") {
							t.Fatalf("%s: reason %q does not name %s", id, c.Reason, large)
						}
						sawFreeing = true
					}
				}
				// Once its instance is being created (Locked, BOOTING) the
				// large container no longer waits at quota.
				if hasType(h, "large") || h.container(large).ReasonCode == queue.ReasonBooting {
					return true
				}
				if s := startedSince(h, queued, counts); len(s) > 0 {
					t.Fatalf("step %d: priority-1 containers %v started while %s waited at quota%s", submitted, s, large, h.dumpContainers())
				}
				return false
			})
			// The first busy container ends after 20s: well within one
			// container's run time (20-34s).
			if submitted > 30 {
				t.Fatalf("large instance created after %d steps, want within one container's run time", submitted)
			}
			h.runningOn(large, 20)
			if n := typeCreates(h, "large"); n != 1 {
				t.Fatalf("%d large instances created, want 1", n)
			}
			if !sawFreeing {
				t.Fatalf("no waiting container said which container a slot was being freed for")
			}
			freed := 0
			for _, e := range mustEvents(h) {
				if e.Kind == worker.EventShutdown && strings.Contains(e.Reason, "freeing its quota for "+large) {
					freed++
				}
			}
			if freed != 1 {
				t.Fatalf("%d instances shut down for %s, want exactly 1", freed, large)
			}
			if n := len(h.live()); n > 8 {
				t.Fatalf("%d instances, max_instances 8", n)
			}
			// The rest run as the small instances free up again.
			for _, id := range queued {
				h.until(id+" complete", 200, func() bool { return h.state(id) == queue.Complete })
			}
		})
	}
}

// TestHeldInstanceNotShutDownForQuota: an idle held instance is never the
// one shut down for a waiting higher-priority container; a busy one that
// frees up is.
func TestHeldInstanceNotShutDownForQuota(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dispatcher.MaxInstances = 4
	h := newHarness(t, cfg, fake.Options{BootDelay: 3 * time.Second})
	held := idleInstance(h)
	if _, err := h.eng.HoldInstance(held, "test", "keep"); err != nil {
		t.Fatal(err)
	}
	queued := busySmalls(h, 3, 3)
	large := h.submit(-1, 0, prio(2), ram(20*gib))
	counts := startCounts(h, queued)
	h.until("large instance created", 80, func() bool {
		if !slicesContains(h.live(), cloud.InstanceID(held)) {
			t.Fatalf("held instance %s shut down:%s", held, h.eventsOf(held))
		}
		// Once its instance is being created (Locked, BOOTING) the large
		// container no longer waits at quota: a small instance freed
		// after that may take the next small container.
		if hasType(h, "large") || h.container(large).ReasonCode == queue.ReasonBooting {
			return true
		}
		if s := startedSince(h, queued, counts); len(s) > 0 {
			t.Fatalf("%v started while %s waited at quota%s", s, large, h.dumpContainers())
		}
		return false
	})
	h.runningOn(large, 20)
	if v := h.instance(held); v.IdleBehavior != worker.IdleHold || len(v.Containers) != 0 {
		t.Fatalf("held instance: %+v", v)
	}
}

// TestSupervisorFractionAvoidsDeadlock: 20 supervisors that each wait for
// a child they submit, at max_instances 10 and one container per
// instance. With supervisor_fraction 0.3 at most 3 supervisors hold
// instances, the children get the rest, and all finish; with no limit the
// supervisors take every instance and no child ever starts.
func TestSupervisorFractionAvoidsDeadlock(t *testing.T) {
	for _, tc := range []struct {
		fraction float64
		deadlock bool
	}{
		{0.3, false},
		{0, true},
	} {
		t.Run(fmt.Sprintf("fraction=%g", tc.fraction), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Dispatcher.MaxInstances = 10
			cfg.Dispatcher.SupervisorFraction = tc.fraction
			h := newHarness(t, cfg, fake.Options{BootDelay: 2 * time.Second})
			var sups []string
			for range 20 {
				sups = append(sups, h.submit(-1, 0, supervisor))
			}
			child := map[string]string{} // supervisor → its child
			maxSups := 0
			step := func() {
				running := 0
				for _, s := range sups {
					c := h.container(s)
					if c.State == queue.Running || c.State == queue.Locked {
						running++
					}
					// A running supervisor submits its child once, and
					// ends once the child has.
					if c.State == queue.Running && child[s] == "" {
						child[s] = h.submit(5*time.Second, 0)
					}
					if ch := child[s]; ch != "" && h.state(ch) == queue.Complete && c.State == queue.Running && !c.KillRequested {
						if _, err := h.eng.KillContainer(s, "test", "its child finished"); err != nil {
							t.Fatal(err)
						}
					}
				}
				maxSups = max(maxSups, running)
				h.step(1)
			}
			if tc.deadlock {
				for range 200 {
					step()
				}
				for s, ch := range child {
					if h.cloud.StartCount(ch) > 0 {
						t.Fatalf("child %s of %s started: no deadlock without the limit?", ch, s)
					}
				}
				if len(child) != 10 {
					t.Fatalf("%d supervisors started, want all 10 instances taken", len(child))
				}
				return
			}
			for i := 0; ; i++ {
				done := len(child) == len(sups)
				for _, s := range sups {
					done = done && h.state(s).Final() && h.state(child[s]) == queue.Complete
				}
				if done {
					break
				}
				if i > 2000 {
					t.Fatalf("not all finished after %d steps%s", i, h.dumpContainers())
				}
				step()
			}
			if maxSups > 3 {
				t.Fatalf("%d supervisors Locked or Running at once, limit 3 (0.3 × 10)", maxSups)
			}
		})
	}
}

// TestSupervisorLimitReason: a supervisor past the limit waits with the
// reason naming the limit.
func TestSupervisorLimitReason(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dispatcher.MaxInstances = 10
	h := newHarness(t, cfg, fake.Options{})
	var ids []string
	for range 4 {
		ids = append(ids, h.submit(-1, 0, supervisor))
	}
	h.step(3)
	if c := h.container(ids[3]); c.State != queue.Queued || c.Reason != "supervisor limit (3 of 3)" || c.ReasonCode != queue.ReasonSupervisorLimit {
		t.Fatalf("fourth supervisor: %s %s %q, want Queued SUPERVISOR_LIMIT \"supervisor limit (3 of 3)\"", c.State, c.ReasonCode, c.Reason)
	}
	h.checkPendingReasons()
}

// TestSupervisorCapLoweredByQuota: max_instances 10 (cap 3), a provider
// quota of 3. One supervisor runs; two more are Locked to instances that
// are booting when a child is submitted. The child's create hits the
// quota, which lowers the limit to 3 and the cap to 1: the two Locked
// supervisors are unlocked, the Running one stays, and the child takes one
// of the booting instances and runs once. Without that the two supervisors
// started and the child waited at quota for ever.
func TestSupervisorCapLoweredByQuota(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dispatcher.MaxInstances = 10
	h := newHarness(t, cfg, fake.Options{Quota: 3, BootDelay: 20 * time.Second})
	run := h.submit(-1, 0, supervisor)
	h.runningOn(run, 60)
	locked := []string{h.submit(-1, 0, supervisor), h.submit(-1, 0, supervisor)}
	h.until("two more supervisors Locked, with instances booting", 10, func() bool {
		return h.state(locked[0]) == queue.Locked && h.state(locked[1]) == queue.Locked && len(h.live()) == 3
	})
	child := h.submit(5*time.Second, 0)
	h.until("the child's create refused for quota, the excess supervisors unlocked", 10, func() bool {
		for _, id := range locked {
			if c := h.container(id); c.State != queue.Queued || c.ReasonCode != queue.ReasonSupervisorLimit {
				return false
			}
		}
		return true
	})
	h.until("the child done", 120, func() bool {
		for _, id := range locked {
			if n := h.cloud.StartCount(id); n != 0 {
				t.Fatalf("supervisor %s over the cap started %d times%s", id, n, h.dumpContainers())
			}
		}
		if c := h.container(run); c.State != queue.Running || c.KillRequested {
			t.Fatalf("the Running supervisor: %s, kill requested %v; want it left running", c.State, c.KillRequested)
		}
		return h.state(child) == queue.Complete
	})
	if c := h.container(child); c.ExitCode == nil || *c.ExitCode != 0 || c.Attempts != 1 || h.cloud.StartCount(child) != 1 {
		t.Fatalf("child: exit %v after %d attempts, %d starts; want exit 0, run once", c.ExitCode, c.Attempts, h.cloud.StartCount(child))
	}
	for _, id := range locked {
		if c := h.container(id); c.Attempts != 0 || c.Reason != "supervisor limit (1 of 1)" {
			t.Errorf("supervisor %s: %d attempts, %q; want none spent, \"supervisor limit (1 of 1)\"", id, c.Attempts, c.Reason)
		}
	}
	h.checkPendingReasons()
}

// TestLabelsPlacement: a container goes only to a type with every one of
// its labels (the cheapest such type, never an idle instance without
// them); one asking for labels no type has is refused at submit naming
// them.
func TestLabelsPlacement(t *testing.T) {
	cfg := testConfig(t)
	cfg.InstanceTypes[1].Labels = map[string]string{"zone": "eu"}                // medium
	cfg.InstanceTypes[2].Labels = map[string]string{"zone": "eu", "gpu": "a100"} // large
	h := newHarness(t, cfg, fake.Options{})
	small := idleInstance(h)
	for _, tc := range []struct {
		name     string
		opts     []specOpt
		wantType string
	}{
		{"no labels: cheapest, the idle one", nil, "small"},
		{"zone=eu: medium, the cheapest with it", []specOpt{labels("zone", "eu")}, "medium"},
		{"gpu=a100: large only", []specOpt{labels("gpu", "a100")}, "large"},
		{"both: large", []specOpt{labels("gpu", "a100", "zone", "eu")}, "large"},
	} {
		id := h.submit(-1, 0, tc.opts...)
		inst := h.runningOn(id, 30)
		if got := h.instance(inst).Type; got != tc.wantType {
			t.Errorf("%s: on %s (%s), want type %s", tc.name, inst, got, tc.wantType)
		}
		if tc.wantType != "small" && inst == small {
			t.Errorf("%s: placed on the idle unlabelled instance", tc.name)
		}
	}
	for _, tc := range []struct {
		name string
		opts []specOpt
		want string
	}{
		{"unknown value", []specOpt{labels("gpu", "h100")}, "no instance type has labels gpu=h100"},
		{"no type has both", []specOpt{labels("gpu", "a100", "zone", "us")}, "no instance type has labels gpu=a100 zone=us"},
		{"labels fit, size does not", []specOpt{labels("zone", "eu"), ram(64 * gib)}, "among types with labels zone=eu"},
	} {
		spec := queue.Spec{Command: []string{"true"}}
		for _, o := range tc.opts {
			o(&spec)
		}
		_, err := h.eng.Submit(spec, "test")
		var nf *NoFitError
		if !errors.As(err, &nf) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want *NoFitError containing %q", tc.name, err, tc.want)
		}
	}
	h.checkPendingReasons()
}

// TestHostLabelsThroughConfig: labels on [[cloud.sshhosts.host]] entries
// reach their type through the config, and placement follows them.
func TestHostLabelsThroughConfig(t *testing.T) {
	parsed, err := config.Parse([]byte(`
[[cloud.sshhosts.host]]
address = "10.0.0.5"
instance_type = "large"
labels = {gpu = "a100"}

[[instance_type]]
name = "small"
vcpus = 1
ram = "2GiB"
scratch = "10GiB"
price = 1.0

[[instance_type]]
name = "large"
vcpus = 8
ram = "32GiB"
scratch = "100GiB"
price = 4.0
`), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.InstanceTypes = parsed.InstanceTypes
	h := newHarness(t, cfg, fake.Options{})
	id := h.submit(-1, 0, labels("gpu", "a100"))
	if typ := h.instance(h.runningOn(id, 30)).Type; typ != "large" {
		t.Fatalf("gpu=a100 container on a %s instance, want large (its host's label)", typ)
	}
}

// TestBootedInstanceRoomFilledAtQuota: an instance created for a container
// is busy once that container starts on it, so the room left beside it is
// filled like any busy instance's, by a lower-priority container, while a
// higher one that cannot use that instance waits at quota. Nothing is shut
// down for the waiting one: no instance is idle.
func TestBootedInstanceRoomFilledAtQuota(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dispatcher.MaxInstances = 2
	cfg.Dispatcher.MaxContainersPerInstance = 2 // as in the chaos soak
	soakSchedulingConfig(cfg)                   // large is labelled disk=ssd
	h := newHarness(t, cfg, fake.Options{BootDelay: 3 * time.Second})
	busySmalls(h, 1, 0) // one small instance, busy for 20s
	big := h.submit(-1, 0, prio(5), ram(20*gib))
	h.until(big+" booting", 10, func() bool { return h.container(big).ReasonCode == queue.ReasonBooting })
	// Needs a new small instance (4 × small's price is too much to share
	// a large one): waits at quota.
	waiting := h.submit(-1, 0, prio(5))
	// Can only go on the large instance.
	filler := h.submit(-1, 0, prio(4), labels("disk", "ssd"))
	bigOn := h.runningOn(big, 30)
	h.runningOn(filler, 5)
	if on := h.container(filler).InstanceID; on != bigOn {
		t.Fatalf("%s on %s, want beside %s on %s", filler, on, big, bigOn)
	}
	if c := h.container(waiting); c.State == queue.Running || c.ReasonCode != queue.ReasonQuota {
		t.Fatalf("%s: %s %s, want waiting at quota%s", waiting, c.State, c.ReasonCode, h.dumpContainers())
	}
	for _, e := range mustEvents(h) {
		if e.Kind == worker.EventShutdown {
			t.Fatalf("instance shut down while none was idle: %s", e.Reason)
		}
	}
}
