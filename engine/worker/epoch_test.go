package worker

import (
	"context"
	"strings"
	"testing"

	"dispatch-tui/engine/runner"
)

// TestRunnerCallsCarryTheEpoch: a pool leading with epoch 3 raises its
// runners to 3 with its first calls (the probes), so a caller of an older
// epoch is refused; once a newer leader has called the runner, the pool's
// own start is refused, and nothing runs.
func TestRunnerCallsCarryTheEpoch(t *testing.T) {
	h := newHarness(t, hopt{pool: func(o *Options) { o.Epoch = 3 }})
	h.step()
	id := h.createIdle("small")
	exec, err := h.drv.ExecutorByID(id)
	if err != nil {
		t.Fatal(err)
	}
	at := func(epoch int64) *runner.Client {
		return &runner.Client{Exec: exec, Path: h.cfg.Cloud.RunnerPath + "~" + testHash, Epoch: epoch}
	}
	if _, err := at(2).List(context.Background()); !runner.IsFenced(err) || !strings.Contains(err.Error(), "epoch 2 is lower than epoch 3") {
		t.Fatalf("list at epoch 2 after the pool's probes at 3: %v; want refused naming both", err)
	}
	// A newer leader reaches the runner: this pool is deposed.
	if _, err := at(4).List(context.Background()); err != nil {
		t.Fatalf("list at epoch 4: %v", err)
	}
	if err := h.pool.StartContainer(id, spec("c1", "sleep", "100")); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	f := h.pool.TakeStartFailures()
	if len(f) != 1 || f[0].ContainerID != "c1" || !runner.IsFenced(f[0].Err) || !strings.Contains(f[0].Err.Error(), "epoch 3 is lower than epoch 4") {
		t.Fatalf("start failures of the deposed pool: %+v; want c1 refused, naming epochs 3 and 4", f)
	}
	sts, err := at(4).List(context.Background())
	if err != nil || len(sts) != 0 {
		t.Fatalf("the runner after the refused start: %+v, %v; want nothing", sts, err)
	}
}
