package engine

import (
	"math"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/cost"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// The queued estimate reads the queue: two containers completed on a
// small (their run times as recorded), one runs, and of three waiting at
// quota the head is locked to small (estimated at small's price × the
// median of the two runs), the next has no type yet (untyped) and a held
// one waits for an operator, not for dollars (left out).
func TestCostQueuedEstimate(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dispatcher.MaxInstances = 1
	h := newHarness(t, cfg, fake.Options{})
	a := h.submit(10*time.Minute, 0)
	b := h.submit(30*time.Minute, 0)
	h.until("a running", 60, func() bool { return h.state(a) == queue.Running })
	h.clk.Advance(10 * time.Minute)
	h.until("b running after a", 60, func() bool { return h.state(a) == queue.Complete && h.state(b) == queue.Running })
	h.clk.Advance(30 * time.Minute)
	h.until("b complete", 60, func() bool { return h.state(b) == queue.Complete })
	r := h.submit(-1, 0)
	h.until("r running", 60, func() bool { return h.state(r) == queue.Running })
	w1 := h.submit(-1, 0)
	w2 := h.submit(-1, 0)
	held := h.submit(-1, 0)
	if _, err := h.eng.ApplyContainerVerb(held, view.ContainerHold, "test", ""); err != nil {
		t.Fatal(err)
	}
	h.until("w1 locked at quota", 30, func() bool { return h.state(w1) == queue.Locked && h.state(w2) == queue.Queued })

	run := func(id string) time.Duration { c := h.container(id); return c.FinishedAt.Sub(c.StartedAt) }
	median := (run(a) + run(b)) / 2
	if run(a) < 10*time.Minute || run(b) < 30*time.Minute {
		t.Fatalf("runs of %v and %v: shorter than their commands", run(a), run(b))
	}
	q := h.eng.Cost(cost.By{Field: "type"}, time.Time{}).Queued
	if q == nil || len(q.Lines) != 1 {
		t.Fatalf("queued %+v, want one line (small)", q)
	}
	l := q.Lines[0]
	want := 1.0 * median.Hours() // small is $1.00/h
	if l.Type != "small" || l.Containers != 1 || !l.Known || l.Finished != 2 || l.MedianRun != median || math.Abs(l.Dollars-want) > 1e-9 {
		t.Errorf("line %+v, want small: 1 container, median %v of 2 runs, $%.6f", l, median, want)
	}
	if math.Abs(q.Dollars-want) > 1e-9 || q.Unknown != 0 || q.Untyped != 1 {
		t.Errorf("queued $%.6f, %d unknown, %d untyped; want $%.6f, 0, 1 (w2; the held one left out)", q.Dollars, q.Unknown, q.Untyped, want)
	}
}
