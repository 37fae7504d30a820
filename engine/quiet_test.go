package engine

import (
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/queue"
)

// TestQuietQueueIsNotWalked: the engine's steps on a paused queue, with
// the pool's own work going on, walk the queue once to set its reasons
// and then not again, however many ticks pass; the summary's longest wait
// still grows; a resume is acted on at the next step.
func TestQuietQueueIsNotWalked(t *testing.T) {
	t.Parallel()
	h := newHarness(t, testConfig(t), fake.Options{})
	if err := h.eng.Pause("test", "keep the queue waiting"); err != nil {
		t.Fatal(err)
	}
	specs := make([]queue.Spec, 2000)
	for i := range specs {
		specs[i] = queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2}}
	}
	if _, err := h.eng.SubmitBatch(specs, "test"); err != nil {
		t.Fatal(err)
	}
	h.step(3) // the first pass sets the reasons, the next finds them set
	walks := h.eng.sched.Passes()
	wait0 := h.eng.Summary().LongestWait
	h.step(100)
	if got := h.eng.sched.Passes() - walks; got != 0 {
		t.Errorf("%d passes walked the paused queue in 100 steps, want 0", got)
	}
	if got := h.eng.Summary().LongestWait; got != wait0+100*time.Second {
		t.Errorf("longest wait %s after 100 quiet steps, want %s", got, wait0+100*time.Second)
	}
	if err := h.eng.Resume("test", ""); err != nil {
		t.Fatal(err)
	}
	h.step(1)
	if h.eng.sched.Passes() == walks {
		t.Fatal("the step after a resume did not run a pass")
	}
	h.until("a container running after the resume", 60, func() bool { return h.eng.queue.Counts()[queue.Running] > 0 })
}
