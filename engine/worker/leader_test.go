package worker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
)

// TestNotLeadingSendsNothing: once MayAct says the lease may be gone, the
// pool sends no create, start, kill, tag write or destroy, whatever it had
// decided; and a runner refusing its epoch is reported to OnFenced.
func TestNotLeadingSendsNothing(t *testing.T) {
	var acting atomic.Bool
	acting.Store(true)
	var mu sync.Mutex
	var fenced []error
	h := newHarness(t, hopt{pool: func(o *Options) {
		o.Epoch = 3
		o.MayAct = acting.Load
		o.OnFenced = func(err error) { mu.Lock(); fenced = append(fenced, err); mu.Unlock() }
	}})
	h.step()
	id := h.createIdle("small")
	if inst, ok := h.drv.Instance(id); !ok || inst.Tags()[cloud.TagEpoch] != "3" {
		t.Fatalf("instance %s created at epoch 3 has tags %v; want %s = 3", id, inst.Tags(), cloud.TagEpoch)
	}
	exec, err := h.drv.ExecutorByID(id)
	if err != nil {
		t.Fatal(err)
	}
	at := func(epoch int64) *runner.Client {
		return &runner.Client{Exec: exec, Path: h.cfg.Cloud.RunnerPath + "~" + testHash, Epoch: epoch}
	}
	if err := h.pool.StartContainer(id, spec("c1", "sleep", "100")); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	listed := func() int {
		t.Helper()
		sts, err := at(3).List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return len(sts)
	}
	if n := listed(); n != 1 {
		t.Fatalf("runner lists %d containers after a start while acting; want 1", n)
	}

	acting.Store(false)
	if err := h.pool.Create("small"); err != nil {
		t.Fatal(err)
	}
	if err := h.pool.StartContainer(id, spec("c2", "sleep", "100")); err != nil {
		t.Fatal(err)
	}
	h.pool.KillContainer(id, "c1")
	if _, err := h.pool.SetIdleBehavior(id, IdleHold); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		h.step()
	}
	insts, err := h.drv.Instances(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(insts) != 1 || insts[0].ID() != id || insts[0].Tags()[cloud.TagIdleBehavior] != string(IdleRun) {
		t.Fatalf("the provider after a create and a tag write while not acting: %v; want only %s, tags untouched", insts, id)
	}
	sts, err := at(3).List(context.Background())
	if err != nil || len(sts) != 1 || sts[0].ID != "c1" || sts[0].State != "running" {
		t.Fatalf("runner after start and kill while not acting: %+v, %v; want c1 alone, running", sts, err)
	}
	f := h.pool.TakeStartFailures()
	if len(f) != 1 || f[0].ContainerID != "c2" || !errors.Is(f[0].Err, ErrNotLeading) {
		t.Fatalf("start failures while not acting: %+v; want c2, ErrNotLeading", f)
	}

	// A newer leader reaches the runner: this pool's next probe is
	// refused, and OnFenced hears of it.
	if _, err := at(4).List(context.Background()); err != nil {
		t.Fatal(err)
	}
	acting.Store(true)
	h.until("OnFenced to hear of the refused probe", time.Minute, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(fenced) > 0
	})
	mu.Lock()
	if !runner.IsFenced(fenced[0]) {
		t.Fatalf("OnFenced heard %v; want the runner's refusal of epoch 3", fenced)
	}
	mu.Unlock()

	acting.Store(false)
	h.pool.Shutdown(id, "test")
	for range 3 {
		h.step()
	}
	if insts, err := h.drv.Instances(context.Background(), nil); err != nil || len(insts) != 1 {
		t.Fatalf("the provider after a destroy while not acting: %v, %v; want %s still there", insts, err, id)
	}
}
