package engine

import (
	"sync"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
)

// An exit a runner announces is recorded by Run at once, not by the next
// pass (docs/design.md §6, Exit notices): passes run at most once per
// minPassGap of the engine's clock, and here the clock stands still after
// the pass Run starts with, so no later pass is ever due. The output is
// stored and the container forgotten once the exit is written.
func TestRunRecordsAnnouncedExitWithoutWaitingForAPass(t *testing.T) {
	cfg := testConfig(t)
	cfg.Cloud.ProbeInterval = time.Hour // only the notice can tell the exit
	h := newHarness(t, cfg, fake.Options{ExitNotices: true})
	id := h.submit(30*time.Second, 0)
	inst := cloud.InstanceID(h.runningOn(id, 60))
	h.untilWatching(inst)
	h.step(1) // the list a ready watch asks for
	// The container ends; its runner says so only at AnnounceExits.
	h.clk.Advance(time.Minute)

	steps := h.runInBackground()
	select {
	case <-steps:
	case <-time.After(wait.Budget(20 * time.Second)):
		t.Fatal("Run ran no pass in 20 s")
	}
	if st := h.state(id); st != queue.Running {
		t.Fatalf("after Run's first pass, before the notice: %s, want Running (no probe is due)", st)
	}

	h.cloud.AnnounceExits()
	deadline := time.Now().Add(wait.Budget(10 * time.Second))
	for h.state(id) != queue.Complete {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the notice, with the clock standing still: %s, want Complete without waiting for a pass\nevents:%s", h.state(id), h.eventsOf(id))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if c := h.container(id); c.ExitCode == nil || *c.ExitCode != 0 {
		t.Fatalf("recorded exit code %v, want 0 (the runner's)", c.ExitCode)
	}
	for len(h.cloud.Containers(inst)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the runner still holds %v after the exit was written", h.cloud.Containers(inst))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A slow store write (a busy disk: two fdatasyncs, up to hundreds of ms)
// holds back neither the next exit nor the next pass: Run writes behind
// its loop. The forget of what a step recorded still waits for its write
// (docs/design.md §3): a runner must not forget a container the store
// does not have final.
func TestRunRecordsExitsWhileTheStoreWriteIsSlow(t *testing.T) {
	cfg := testConfig(t)
	cfg.Cloud.ProbeInterval = time.Hour // only the notice can tell the exit
	h := newHarness(t, cfg, fake.Options{ExitNotices: true})
	id := h.submit(30*time.Second, 0)
	inst := cloud.InstanceID(h.runningOn(id, 60))
	h.untilWatching(inst)
	h.step(1)
	h.clk.Advance(time.Minute)

	// Every write from now on waits until released.
	release := make(chan struct{})
	var once sync.Once
	write := h.eng.writeSteps
	h.eng.writeSteps = func() error {
		<-release
		return write()
	}
	steps := h.runInBackground()
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // runs first
	select {
	case <-steps:
	case <-time.After(wait.Budget(20 * time.Second)):
		t.Fatal("Run finished no pass in 20 s: it waits for the pass's store write")
	}

	h.cloud.AnnounceExits()
	deadline := time.Now().Add(wait.Budget(10 * time.Second))
	for h.state(id) != queue.Complete {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the notice, with the store write held: %s, want Complete (the loop must not wait for the disk)", h.state(id))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if held := h.cloud.Containers(inst); len(held) != 1 {
		t.Fatalf("before its Complete is written the runner holds %+v, want the exited container still there", held)
	}
	once.Do(func() { close(release) })
	for len(h.cloud.Containers(inst)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the runner still holds %v after the write was released", h.cloud.Containers(inst))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
