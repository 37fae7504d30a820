package worker

import (
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
)

// Draining an idle instance shuts it down at once; the tag update started
// by the drain then fails on a destroyed instance. That failure is not a
// cloud error: no cloud_error event (it used to log "set tags failed ...
// is destroyed" on every drain of an idle instance).
func TestDrainIdleNoFalseCloudError(t *testing.T) {
	for _, destroyedFirst := range []bool{true, false} {
		h := newHarness(t, hopt{})
		h.step()
		id := h.createIdle("small")
		gate := make(chan struct{})
		h.set.tagsGate = gate
		if _, err := h.pool.SetIdleBehavior(id, IdleDrain); err != nil {
			t.Fatal(err)
		}
		if destroyedFirst {
			// The destroy lands while the tag call is still in flight.
			h.pool.Step()
			next := func() {
				h.clk.Advance(time.Second)
				h.pool.Step()
			}
			wait.With{Step: next, Seen: h.dump}.Until(t, "a destroy after the drain", 10*time.Second, func() bool { return h.drv.Stats().Destroyed != 0 })
		}
		close(gate)
		h.pool.Wait()
		h.until("drained instance shut down", time.Minute, func() bool { return h.state(id) == StateShutdown || h.state(id) == "" })
		h.run(5 * time.Second)
		h.mu.Lock()
		for _, e := range h.events {
			if e.Kind == EventCloudError {
				t.Errorf("destroyedFirst=%v: false cloud error: %+v", destroyedFirst, e)
			}
		}
		h.mu.Unlock()
		h.set.tagsGate = nil
	}
}
