package engine

import (
	"math"
	"strings"
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
// median of the two runs), the next has no type yet and may get small or
// medium (within max_price_factor 1.5; large is not): a range over those
// whose cost is known, small only; one that needs 2 vCPUs may get only
// medium, which no container has finished on (untyped); and a held one
// waits for an operator, not for dollars (left out).
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
	w3 := h.submit(-1, 0, func(s *queue.Spec) { s.RuntimeConstraints.VCPUs = 2 })
	held := h.submit(-1, 0)
	if _, err := h.eng.ApplyContainerVerb(held, view.ContainerHold, "test", ""); err != nil {
		t.Fatal(err)
	}
	h.until("w1 locked at quota", 30, func() bool {
		return h.state(w1) == queue.Locked && h.state(w2) == queue.Queued && h.state(w3) == queue.Queued
	})

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
		t.Errorf("queued $%.6f, %d unknown, %d untyped; want $%.6f, 0, 1 (w3; the held one left out)", q.Dollars, q.Unknown, q.Untyped, want)
	}
	if len(q.Ranges) != 2 {
		t.Fatalf("ranges %+v, want w2's (small, medium) and w3's (medium)", q.Ranges)
	}
	if r := q.Ranges[0]; strings.Join(r.Types, ",") != "medium" || r.Containers != 1 || r.Known {
		t.Errorf("range %+v, want w3 on medium, unknown", r)
	}
	if r := q.Ranges[1]; strings.Join(r.Types, ",") != "small,medium" || r.Containers != 1 || !r.Known || math.Abs(r.Low-want) > 1e-9 || math.Abs(r.High-want) > 1e-9 {
		t.Errorf("range %+v, want w2 on small or medium at $%.6f (only small's cost is known)", r, want)
	}
	if math.Abs(q.Low-2*want) > 1e-9 || math.Abs(q.High-2*want) > 1e-9 {
		t.Errorf("queued $%.6f..$%.6f, want $%.6f both ends", q.Low, q.High, 2*want)
	}
}
