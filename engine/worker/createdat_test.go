package worker

import (
	"testing"
	"time"
)

// An instance's creation time is kept in its tags, so that a restarted
// dispatcher shows its real age instead of counting from the restart.
func TestCreatedAtSurvivesRestart(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	created := h.clk.Now()
	id := h.createIdle("small")
	before, _ := h.pool.Instance(id)
	if !before.CreatedAt.Equal(created) {
		t.Fatalf("CreatedAt %v, want the create's time %v", before.CreatedAt, created)
	}
	h.pool.Stop()

	h.clk.Advance(time.Hour)
	h.pool = h.newPool(nil)
	h.step()
	after, ok := h.pool.Instance(id)
	if !ok {
		t.Fatalf("%s not adopted: %s", id, h.dump())
	}
	if !after.CreatedAt.Equal(created.Truncate(time.Second)) {
		t.Errorf("after a restart CreatedAt = %v, want %v", after.CreatedAt, created)
	}
	if !after.AppearedAt.Equal(h.clk.Now()) {
		t.Errorf("AppearedAt = %v, want the restart's time %v (it drives the probe timeouts)", after.AppearedAt, h.clk.Now())
	}
}
