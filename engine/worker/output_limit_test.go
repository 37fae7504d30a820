package worker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/runner"
)

// exitedWith starts a container that writes about size bytes and exits 3
// on inst, and waits until the runner's list reports it exited.
func exitedWith(h *harness, inst cloud.InstanceID, cid string, size int) {
	h.t.Helper()
	if err := h.pool.StartContainer(inst, spec(cid, fake.CmdOutput(time.Second, 3, size)...)); err != nil {
		h.t.Fatal(err)
	}
	h.until(cid+" exited", time.Minute, func() bool {
		v, _ := h.pool.Instance(inst)
		i := findStatus(v.Reported, cid)
		return i >= 0 && v.Reported[i].State == runner.StateExited
	})
}

// A forget fetches at most containers.max_output of an output, its end,
// and hands the store what was dropped.
func TestForgetFetchesAtMostMaxOutput(t *testing.T) {
	const limit = 8 << 10
	h, sink := newSinkHarnessMode(t, hopt{cfg: func(c *config.Config) { c.Containers.MaxOutput = limit }}, true)
	id := h.createIdle("small")
	exitedWith(h, id, "c1", 50_000)
	h.pool.ForgetContainer(id, "c1")
	h.pool.Wait()
	out, ok, _, _ := sink.get("c1")
	sink.mu.Lock()
	dropped := sink.dropped["c1"]
	sink.mu.Unlock()
	if !ok || len(out) > limit || !strings.HasSuffix(out, "exited 3\n") {
		t.Fatalf("stored %v: %d bytes ending %q; want at most %d, the output's end", ok, len(out), out[max(0, len(out)-20):], limit)
	}
	if dropped < 50_000-limit || dropped != runner.DroppedFor(int64(len(out))+dropped, limit) {
		t.Fatalf("dropped %d of %d bytes", dropped, int64(len(out))+dropped)
	}
	if listed(h, id, "c1") {
		t.Fatal("stored but not forgotten")
	}
}

// The runner defers the logs of a forget batch past MaxBatchOutput; the
// sender asks for them in its next call, and every output is stored once
// and forgotten.
func TestForgetAsksAgainForDeferredOutput(t *testing.T) {
	const size = 3 << 20 // three of them pass MaxBatchOutput
	h, sink := newSinkHarnessMode(t, hopt{cfg: func(c *config.Config) { c.Containers.MaxOutput = runner.MaxOutputLimit }}, true)
	sink.hold, sink.held = make(chan struct{}), make(chan struct{})
	id := h.createIdle("small")
	ids := []string{"c0", "c1", "c2", "c3", "c4"}
	for _, c := range ids {
		exitedWith(h, id, c, size)
	}
	h.pool.ForgetContainer(id, ids[0])
	<-sink.held // c0's batch is storing: the others queue behind it
	for _, c := range ids[1:] {
		h.pool.ForgetContainer(id, c)
	}
	close(sink.hold)
	h.pool.Wait()
	if !slices.Equal(sink.batches, []int{1, 3, 1}) {
		t.Fatalf("OnLogsBatch calls of %v containers, want [1 3 1] (c4 deferred)", sink.batches)
	}
	for _, c := range ids {
		if out, ok, n, _ := sink.get(c); !ok || n != 1 || len(out) < size || !strings.HasSuffix(out, "exited 3\n") {
			t.Fatalf("%s: %d bytes stored %v after %d attempts", c, len(out), ok, n)
		}
		if listed(h, id, c) {
			t.Fatalf("%s stored but not forgotten", c)
		}
	}
}

// A shutdown stores every output before the destroy, asking again for
// what the runner deferred.
func TestShutdownAsksAgainForDeferredOutput(t *testing.T) {
	const size = 3 << 20
	h, sink := newSinkHarness(t, hopt{cfg: func(c *config.Config) { c.Containers.MaxOutput = runner.MaxOutputLimit }})
	id := h.createIdle("small")
	ids := []string{"c1", "c2", "c3", "c4"}
	for _, c := range ids {
		exitedWith(h, id, c, size)
	}
	if !h.pool.Shutdown(id, "test") {
		t.Fatal("shutdown refused")
	}
	h.until("destroyed", time.Minute, func() bool { return h.set.destroys.Load() > 0 })
	for _, c := range ids {
		out, ok, _, lost := sink.get(c)
		if !ok || len(out) < size || lost != "" || sink.destroysAtStore[c] != 0 {
			t.Fatalf("%s: %d bytes stored %v (lost %q, after %d destroys)", c, len(out), ok, lost, sink.destroysAtStore[c])
		}
	}
}
