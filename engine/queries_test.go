package engine

import (
	"maps"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/queue"
)

// Summary's container counts come from the queue's counts by state; they
// must equal a walk of every container through a mixed workload: runs that
// complete and fail, retries, holds, operator kills of queued and running
// containers, an instance killed under its containers, and finished
// containers dropped beyond keep_finished.
func TestSummaryCountsMatchWalk(t *testing.T) {
	cfg := testConfig(t)
	cfg.Containers.KeepFinished = 6
	h := newHarness(t, cfg, fake.Options{})
	walk := func() map[queue.State]int {
		out := map[queue.State]int{}
		h.eng.queue.Each(func(c *queue.Container) bool {
			out[c.State]++
			return true
		})
		return out
	}
	check := func(when string) {
		t.Helper()
		if got, want := h.eng.Summary().Containers, walk(); !maps.Equal(got, want) {
			t.Fatalf("%s: Summary counts %v, a walk counts %v", when, got, want)
		}
	}
	check("empty")
	var ids []string
	for i := range 12 {
		ids = append(ids, h.submit(time.Duration(i%4+1)*time.Second, i%3))
	}
	retry := h.submit(2*time.Second, 1, maxAttempts(3), func(s *queue.Spec) { s.RestartPolicy = queue.RestartOnFailure })
	forever := h.submit(-1, 0)
	held := h.submit(time.Second, 0)
	check("after submits")
	if _, err := h.eng.HoldContainer(held, "test", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := h.eng.KillContainer(ids[11], "test", ""); err != nil {
		t.Fatal(err)
	}
	check("after a hold and a kill of a queued container")
	for range 8 {
		h.step(1)
		check("while running")
	}
	inst := h.runningOn(forever, 30)
	if _, err := h.eng.KillInstance(inst, "test", "bad disk"); err != nil {
		t.Fatal(err)
	}
	check("after killing an instance")
	h.until("the retried container ends", 60, func() bool { return h.state(retry).Final() })
	check("after retries")
	h.runningOn(forever, 60)
	if _, err := h.eng.KillContainer(forever, "test", ""); err != nil {
		t.Fatal(err)
	}
	h.until("the killed container ends", 30, func() bool { return h.state(forever) == queue.Cancelled })
	check("after killing a running container")
	if total, _ := h.eng.queue.Len(); total >= len(ids)+3 {
		t.Fatalf("%d containers kept: none dropped beyond keep_finished", total)
	}
	h.restart()
	check("after a restart")
}
