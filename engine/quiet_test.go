package engine

import (
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
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

// TestQuietQueueAtQuotaIsNotWalked: at quota on the fake driver, the
// instances busy, listed and probed at every step, the rest of the queue
// waiting: the steps after the reasons are set skip their passes. Each
// skipped pass is run all the same (checkedStep), and the test fails if
// one would have changed a record, created, started, killed or shut down
// anything. The quota's rise (an instance's container ending) is acted on
// at the next step.
func TestQuietQueueAtQuotaIsNotWalked(t *testing.T) {
	t.Parallel()
	h, busy := atQuotaWith(t, 500)
	skipped := 0
	for range 100 {
		if h.checkedStep() {
			skipped++
		}
	}
	if skipped != 100 {
		t.Errorf("%d of 100 steps at quota skipped their pass, want all", skipped)
	}
	if !h.eng.Summary().AtQuota {
		t.Fatalf("not at quota: %+v", h.eng.Summary())
	}
	if _, err := h.eng.KillContainer(busy[0], "test", ""); err != nil {
		t.Fatal(err)
	}
	h.until("a waiting container running in the freed place", 120, func() bool { return h.eng.queue.Counts()[queue.Running] == 3 && h.state(busy[0]).Final() })
}

// checkedStep is the engine's step with its pass run even when Quiet
// says to skip it; it fails the test if a skipped pass would have changed
// anything, and reports whether Quiet said to skip.
func (h *harness) checkedStep() bool {
	h.t.Helper()
	e := h.eng
	e.stepMu.Lock()
	e.pool.Step()
	e.recordPoolEvents()
	st, quiet := e.sched.QuietWith(e.takeViews)
	gen := e.queue.Generation()
	before := h.poolDoings()
	got, wr := e.sched.Pass()
	e.takeViews()
	e.observeCost()
	wr.Done(e.writeSteps())
	e.stepMu.Unlock()
	h.eng.Settle()
	if quiet {
		if after := h.poolDoings(); e.queue.Generation() != gen || after != before {
			h.t.Fatalf("at %s Quiet said a pass would change nothing, and one changed: generation %d → %d, pool %+v → %+v",
				h.clk.Now().Format(time.TimeOnly), gen, e.queue.Generation(), before, after)
		}
		if got.OverQuota != st.OverQuota || got.AtQuota != st.AtQuota || got.QuotaLimit != st.QuotaLimit || got.AllocatedNotStart != st.AllocatedNotStart {
			h.t.Fatalf("at %s the skipped pass's Stats %+v differ from a real one's %+v", h.clk.Now().Format(time.TimeOnly), st, got)
		}
	}
	h.clk.Advance(time.Second)
	return quiet
}

// poolDoings counts what a pass can have the pool do.
type poolDoings struct{ creates, starts, kills, shutdown int }

func (h *harness) poolDoings() poolDoings {
	st := h.eng.pool.Stats()
	d := poolDoings{starts: st.Starts, kills: st.Kills}
	for _, n := range st.CloudOps["create"] {
		d.creates += n
	}
	d.creates += st.Creating
	for _, v := range h.eng.pool.Instances(nil) {
		if v.State == worker.StateShutdown {
			d.shutdown++
		}
	}
	return d
}

// TestQuietStepsCopyNoInstance: at quota on the fake driver, the
// instances probed every step and listed every five, a step whose pass is
// skipped neither copies the pool's instances (for Quiet) nor walks them
// (for the cost ledger): nothing about them changed, which the pool's
// generation says. A change to one (an instance held) is copied once,
// and the steps after it are quiet again.
func TestQuietStepsCopyNoInstance(t *testing.T) {
	t.Parallel()
	h, _ := atQuotaWith(t, 50)
	passes, copies := h.eng.sched.Passes(), h.eng.costFeed.copies
	h.step(30)
	if got := h.eng.sched.Passes() - passes; got != 0 {
		t.Fatalf("%d passes in 30 steps at quota, want 0", got)
	}
	if got := h.eng.costFeed.copies - copies; got != 0 {
		t.Errorf("30 quiet steps copied the instances %d times, want 0", got)
	}
	id := h.eng.Instances()[0].ID
	if _, err := h.eng.HoldInstance(string(id), "test", ""); err != nil {
		t.Fatal(err)
	}
	copies = h.eng.costFeed.copies
	h.step(10)
	if got := h.eng.costFeed.copies - copies; got == 0 || got > 2 {
		t.Errorf("10 steps after an instance was held copied the instances %d times, want 1 or 2", got)
	}
	if got := h.eng.Instances()[0]; got.IdleBehavior != worker.IdleHold {
		t.Errorf("instance %s is %s after the hold", got.ID, got.IdleBehavior)
	}
}

// atQuotaWith is a harness at quota (max_instances 3) with three
// containers running and queued more waiting, after the steps that set
// their reasons (the first pass sets them, the next finds them set); busy
// are the running ones.
func atQuotaWith(t *testing.T, queued int) (h *harness, busy []string) {
	t.Helper()
	cfg := testConfig(t)
	cfg.Dispatcher.MaxInstances = 3
	h = newHarness(t, cfg, fake.Options{})
	for range 3 {
		busy = append(busy, h.submit(-1, 0))
	}
	h.until("three containers running", 120, func() bool { return h.eng.queue.Counts()[queue.Running] == 3 })
	specs := make([]queue.Spec, queued)
	for i := range specs {
		specs[i] = queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2}}
	}
	if _, err := h.eng.SubmitBatch(specs, "test"); err != nil {
		t.Fatal(err)
	}
	h.step(3)
	return h, busy
}
