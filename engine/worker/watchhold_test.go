package worker

// Starts on a fresh instance wait for its first runner watch to be ready
// (startsHeldLocked), so that the exits of its first containers are
// announced rather than left for a list to find.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

// gatedWatch is an executor whose watch opens only once open is closed,
// as a watch whose SSH session and runner take a while to start.
type gatedWatch struct {
	runner.Executor
	watch runner.WatchExecutor
	open  <-chan struct{}
}

func (g gatedWatch) Watch(ctx context.Context, cmd string, line func([]byte)) error {
	select {
	case <-g.open:
	case <-ctx.Done():
		return runner.NotSent(ctx.Err())
	}
	return g.watch.Watch(ctx, cmd, line)
}

// gatedHarness is a pool on an in-memory cloud whose runners announce
// exits, with one idle instance whose watch waits for open.
func gatedHarness(t *testing.T, open <-chan struct{}) (*harness, cloud.InstanceID) {
	t.Helper()
	var drv *fake.Driver
	h := newHarness(t, hopt{
		drv: func(o *fake.Options) { o.ExitNotices = true },
		pool: func(o *Options) {
			o.NewExecutor = func(inst cloud.Instance) (runner.Executor, error) {
				e, err := drv.Executor(inst)
				if err != nil {
					return nil, err
				}
				return gatedWatch{Executor: e, watch: e.(runner.WatchExecutor), open: open}, nil
			}
		},
	})
	drv = h.drv
	h.step()
	return h, h.createIdle("small")
}

func (h *harness) watching(id cloud.InstanceID) bool {
	h.pool.mu.Lock()
	defer h.pool.mu.Unlock()
	return h.pool.byID[id].watching
}

func TestStartsOnAFreshInstanceWaitForItsWatch(t *testing.T) {
	open := make(chan struct{})
	h, id := gatedHarness(t, open)
	if err := h.pool.StartContainer(id, spec("c1", fake.Cmd(time.Second, 3)...)); err != nil {
		t.Fatal(err)
	}
	h.step()
	h.clk.Advance(2 * time.Second) // c1 would have ended by now, unannounced
	h.step()
	if n := h.pool.Stats().Starts; n != 0 {
		t.Fatalf("%d starts sent while the instance's first watch was not ready, want 0 (held for it)", n)
	}
	close(open)
	wait.Until(t, "the watch on "+string(id)+" ready", 20*time.Second, func() bool { return h.watching(id) })
	h.pool.Wait() // the held start, sent once the watch was ready
	if n := h.pool.Stats().Starts; n != 1 {
		t.Fatalf("%d starts once the watch was ready, want 1", n)
	}
	h.clk.Advance(time.Second)
	h.drv.AnnounceExits()
	wait.With{Seen: func() string {
		v, _ := h.pool.Instance(id)
		return fmt.Sprintf("%d notices; reported %+v", h.pool.Stats().ExitNotices, v.Reported)
	}}.Until(t, "c1's exit announced", 20*time.Second, func() bool { return h.pool.Stats().ExitNotices == 1 })
}

// A watch that is not ready within watchHoldMax holds no start longer: the
// lists that follow starts while no watch is ready find their exits.
func TestStartsHeldForAWatchAtMostWatchHoldMax(t *testing.T) {
	open := make(chan struct{})
	defer close(open)
	h, id := gatedHarness(t, open)
	if err := h.pool.StartContainer(id, spec("c1", "true")); err != nil {
		t.Fatal(err)
	}
	h.step()
	if n := h.pool.Stats().Starts; n != 0 {
		t.Fatalf("%d starts sent at once, want 0 (held for the watch)", n)
	}
	h.clk.Advance(watchHoldMax)
	h.step()
	if n := h.pool.Stats().Starts; n != 1 {
		t.Fatalf("%d starts %s after the watch was opened, want 1 (no longer held)", n, watchHoldMax)
	}
	h.until("c1 listed exited", 30*time.Second, func() bool {
		v, _ := h.pool.Instance(id)
		st, ok := reported(v, "c1")
		return ok && st.State == runner.StateExited
	})
}
