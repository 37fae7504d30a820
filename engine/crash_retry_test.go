// A dispatcher killed between a start reaching its runner and the store
// recording it, on the embedded store (docs/design.md §3, §10): each run
// counts as an attempt after the restart, and none is run twice.

package engine

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store"
)

// errKilled is every write of a dispatcher after its kill -9.
var errKilled = errors.New("killed: this write never reached the disk")

// killableStore is the embedded store of a dispatcher that is killed at a
// moment the test chooses: from then on nothing it writes reaches the
// file, as after a kill -9; Close still releases the file for the next
// dispatcher.
type killableStore struct {
	store.Store
	dead atomic.Bool
}

func (s *killableStore) Flush(b *store.Batch) error {
	if s.dead.Load() {
		return errKilled
	}
	return s.Store.Flush(b)
}

func (s *killableStore) Submit(b *store.Batch) error {
	if s.dead.Load() {
		return errKilled
	}
	return s.Store.Submit(b)
}

func (s *killableStore) PutOutputs(ids []string, outputs [][]byte) error {
	if s.dead.Load() {
		return errKilled
	}
	return s.Store.PutOutputs(ids, outputs)
}

// startKillable builds h's engine, as h.start does, on a killableStore.
func startKillable(h *harness) *killableStore {
	h.t.Helper()
	st, existed, err := OpenStore(h.cfg, filepath.Join(h.cfg.Dispatcher.StateDir, StoreFile))
	if err != nil {
		h.t.Fatal(err)
	}
	ci, err := ResolveClusterID(h.cfg, st, existed)
	if err != nil {
		h.t.Fatal(err)
	}
	ks := &killableStore{Store: st}
	eng, err := New(Options{Config: h.cfg, InstanceSet: h.cloud, NewExecutor: h.cloud.Executor, Clock: h.clk, Store: ks, Owner: ci.ID})
	if err != nil {
		h.t.Fatal(err)
	}
	h.eng = eng
	h.t.Cleanup(func() {
		if h.eng == eng {
			eng.Close()
		}
	})
	return ks
}

// A container retried under on-failure whose second attempt reached its
// runner, and ran to its end, before the pass that started it was written
// (the dispatcher killed in between): after the restart that run is its
// second attempt. It used to be taken for the first attempt's exit, which
// the record said was requeued: forgotten, and run again under the same
// attempt (the crash soak's "ran 3 times but records 2 attempts").
func TestRetryStartedJustBeforeACrashIsCountedOnce(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	inst := idleInstance(h)
	h.eng.Close()
	ks := startKillable(h)
	c := h.submit(5*time.Second, 1, restartOnFailure, maxAttempts(3))
	// A disk slower than the runner: each write lands after the runner
	// calls in flight, and the process dies as soon as the second
	// attempt's start has reached the runner.
	write := h.eng.writeSteps
	h.eng.writeSteps = func() error {
		h.eng.Settle()
		if h.cloud.StartCount(c) == 2 {
			ks.dead.Store(true)
		}
		return write()
	}
	h.until("the second attempt started", 60, func() bool { return ks.dead.Load() })
	h.eng.Close() // its last writes fail: killed
	// The second attempt ends while no dispatcher runs.
	h.clk.Advance(10 * time.Second)
	h.start()
	h.until("final", 60, func() bool { return h.state(c).Final() })
	// Its last attempt fails too, and ends it: Complete, exit code 1.
	got := h.container(c)
	if runs := h.cloud.StartCount(c); got.State != queue.Complete || got.Attempts != 3 || runs != 3 {
		t.Fatalf("%s after %d attempts and %d runs, want Complete after 3 of each; on %s; its events:%s",
			got.State, got.Attempts, runs, inst, h.eventsOf(c))
	}
}
