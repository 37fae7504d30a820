package worker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/config"
)

// A booting instance whose probes fail (the host is not up yet) is a
// normal boot, not an error: the probe's error is in ProbeError only, and
// LastError stays empty until timeout_booting passes, when the boot fails
// with the step it was stuck at.
func TestBootProbeRetriesAreNotErrors(t *testing.T) {
	g := newNetGate()
	h := newHarness(t, hopt{pool: g.wrap, cfg: func(c *config.Config) { c.Cloud.TimeoutBooting = 2 * time.Minute }})
	h.step()
	g.setFail(errors.New("ssh 10.0.0.9:22: connection refused"))
	if err := h.pool.Create("small"); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	id := h.pool.Instances(nil)[0].ID
	h.run(30 * time.Second)
	v := h.view(id)
	if v.State != StateBooting || v.LastError != "" || !v.ProbeFailing || !strings.Contains(v.ProbeError, "connection refused") {
		t.Fatalf("booting with failing probes: want no LastError and the probe error in ProbeError, got state %s last_error %q probe_error %q failing %v",
			v.State, v.LastError, v.ProbeError, v.ProbeFailing)
	}
	if evs := h.eventsOf(id, EventProbeError); len(evs) != 0 {
		t.Fatalf("probe error events while booting: %+v", evs)
	}
	h.until("boot timeout", 3*time.Minute, func() bool { return h.state(id) == StateShutdown || h.state(id) == "" })
	if !h.hasEvent(id, EventBootError, "connection refused") {
		t.Fatalf("the boot failure does not name the step it was stuck at: %+v", h.events)
	}
}

// Probes that succeed clear ProbeError.
func TestProbeErrorClearedOnAnswer(t *testing.T) {
	g := newNetGate()
	h := newHarness(t, hopt{pool: g.wrap})
	h.step()
	g.setFail(errors.New("ssh: connection refused"))
	if err := h.pool.Create("small"); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	id := h.pool.Instances(nil)[0].ID
	h.run(10 * time.Second)
	if v := h.view(id); v.ProbeError == "" {
		t.Fatalf("no probe error while probes fail: %+v", v)
	}
	g.heal()
	h.until("idle", time.Minute, func() bool { return h.state(id) == StateIdle })
	if v := h.view(id); v.ProbeError != "" || v.LastError != "" || v.ProbeFailing {
		t.Fatalf("after an answer: probe_error %q last_error %q failing %v", v.ProbeError, v.LastError, v.ProbeFailing)
	}
}
