package worker

import (
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/config"
)

// lost returns the instance's ContainersLost ("" if it is gone).
func (h *harness) lost(id cloud.InstanceID) string {
	v, _ := h.pool.Instance(id)
	return v.ContainersLost
}

// busyBroken makes an instance with a container running, then cuts it off.
func (h *harness) busyBroken() cloud.InstanceID {
	h.t.Helper()
	id := h.createIdle("small")
	if err := h.pool.StartContainer(id, spec("c1", "sleep", "100000")); err != nil {
		h.t.Fatal(err)
	}
	h.run(2 * time.Second)
	h.drv.Break(id)
	return id
}

// On a cloud whose destroy needs no contact, timeout_probe destroys an
// unreachable instance, and only the accepted destroy writes its
// containers off.
func TestProbeTimeoutLosesContainersOnlyOnceDestroyed(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	id := h.busyBroken()
	h.drv.Configure(func(f *fake.Faults) { f.DestroyErrorRate = 1 })
	h.run(11 * time.Minute)
	if st := h.state(id); st != StateShutdown {
		t.Fatalf("not shut down after timeout_probe: %s", h.dump())
	}
	if l := h.lost(id); l != "" {
		t.Fatalf("containers written off before any destroy was accepted: %q", l)
	}
	h.drv.Configure(func(f *fake.Faults) { f.DestroyErrorRate = 0 })
	h.until("destroy accepted", time.Minute, func() bool { return h.lost(id) != "" })
	if l := h.lost(id); !strings.Contains(l, "destroyed (probe timeout") {
		t.Fatalf("ContainersLost = %q, want it to say the instance was destroyed for its probes", l)
	}
}

// A host whose destroy must reach it is not shut down for failing probes
// while it may hold containers: it waits until the host answers, and its
// list is then applied as usual.
func TestProbeTimeoutKeepsReachDestroyHostWithContainers(t *testing.T) {
	h := newHarness(t, hopt{})
	h.set.reachDestroy.Store(true)
	h.step()
	id := h.busyBroken()
	h.run(30 * time.Minute)
	v, _ := h.pool.Instance(id)
	if v.State != StateRunning || !v.ProbeFailing || v.ContainersLost != "" {
		t.Fatalf("after 30m unreachable: state %s probe_failing %v lost %q; want running, failing, nothing lost", v.State, v.ProbeFailing, v.ContainersLost)
	}
	if n := h.set.destroys.Load(); n != 0 {
		t.Fatalf("%d destroys of a host that may still run containers", n)
	}
	if !h.hasEvent(id, EventShutdownDeferred, "may still be running") {
		t.Fatalf("no %s event", EventShutdownDeferred)
	}
	h.drv.Unbreak(id)
	h.run(time.Minute)
	v, _ = h.pool.Instance(id)
	if v.State != StateRunning || v.ProbeFailing || len(v.Containers) != 1 || v.Containers[0] != "c1" {
		t.Fatalf("after it answers: %+v; want running c1 again", v)
	}
	// Without containers, it is shut down as before.
	h.drv.Break(id)
	h.drv.CrashContainer(id, "c1")
	h.drv.Unbreak(id)
	h.run(5 * time.Second)
	h.pool.ForgetContainer(id, "c1")
	h.run(5 * time.Second)
	h.pool.SetIdleBehavior(id, IdleHold) // keep timeout_idle away
	h.drv.Break(id)
	h.run(11 * time.Minute)
	if st := h.state(id); st == StateShutdown || st == "" {
		t.Fatalf("held: shut down")
	}
	h.pool.SetIdleBehavior(id, IdleRun)
	h.run(time.Minute)
	if st := h.state(id); st != StateShutdown && st != "" {
		t.Fatalf("an unreachable host without containers is not shut down: %s", h.dump())
	}
}

// timeout_unreachable gives up: the containers are written off with a
// reason that says they may still run, and the instance is shut down
// unless held; a held one that answers again has its containers back.
func TestTimeoutUnreachable(t *testing.T) {
	for _, hold := range []bool{false, true} {
		t.Run(map[bool]string{false: "run", true: "hold"}[hold], func(t *testing.T) {
			h := newHarness(t, hopt{cfg: func(c *config.Config) { c.Cloud.TimeoutUnreachable = 15 * time.Minute }})
			h.set.reachDestroy.Store(true)
			h.step()
			id := h.busyBroken()
			if hold {
				h.pool.SetIdleBehavior(id, IdleHold)
			}
			h.run(14 * time.Minute)
			if l := h.lost(id); l != "" {
				t.Fatalf("given up before timeout_unreachable: %q", l)
			}
			h.until("given up", 2*time.Minute, func() bool { return h.lost(id) != "" })
			v, _ := h.pool.Instance(id)
			if !strings.Contains(v.ContainersLost, "may still be running") || !strings.Contains(v.ContainersLost, "timeout_unreachable") {
				t.Fatalf("ContainersLost = %q", v.ContainersLost)
			}
			if !h.hasEvent(id, EventGiveUp, "may still be running") {
				t.Fatalf("no %s event", EventGiveUp)
			}
			if (v.State == StateShutdown) == hold {
				t.Fatalf("hold %v: state %s", hold, v.State)
			}
			if hold {
				h.drv.Unbreak(id)
				h.run(time.Minute)
				if l := h.lost(id); l != "" {
					t.Fatalf("answered again, still written off: %q", l)
				}
			}
		})
	}
}

// An operator's kill writes the containers off at once, reachable or not.
func TestKillInstanceLosesContainersAtOnce(t *testing.T) {
	h := newHarness(t, hopt{})
	h.set.reachDestroy.Store(true)
	h.step()
	id := h.busyBroken()
	if _, err := h.pool.KillInstance(id, "retire"); err != nil {
		t.Fatal(err)
	}
	if l := h.lost(id); !strings.Contains(l, "killed: retire") {
		t.Fatalf("ContainersLost = %q after a kill", l)
	}
}

// After a restart, a host found in the listing that never answers may be
// running containers of the previous run: timeout_probe does not destroy it.
func TestProbeTimeoutKeepsUnreadReachDestroyHost(t *testing.T) {
	h := newHarness(t, hopt{})
	h.set.reachDestroy.Store(true)
	h.step()
	id := h.busyBroken()
	h.pool.Stop()
	h.pool = h.newPool(nil) // a restarted dispatcher
	h.run(30 * time.Minute)
	if st := h.state(id); st != StateUnknown {
		t.Fatalf("an unread host that may run containers is %s, want still unknown: %s", st, h.dump())
	}
	if n := h.set.destroys.Load(); n != 0 {
		t.Fatalf("%d destroys", n)
	}
}
