package queue

import "testing"

// TestFlushTimesCounted: every flush that reaches the store is timed in
// StoreHealth's histogram; its buckets are cumulative.
func TestFlushTimesCounted(t *testing.T) {
	e := newEnv(t, nil)
	before := e.q.StoreHealth().Flushes.Count
	c := e.submit(spec("true"))
	for p := range 3 {
		if _, err := e.q.SetPriority(c.ID, p+2, "operator:alice", ""); err != nil {
			t.Fatal(err)
		}
	}
	h := e.q.StoreHealth().Flushes
	if h.Count != before+3 || len(h.Counts) != len(FlushBuckets) {
		t.Fatalf("%d flushes timed (%d before) in %d buckets; want 3 more in %d", h.Count, before, len(h.Counts), len(FlushBuckets))
	}
	for i := 1; i < len(h.Counts); i++ {
		if h.Counts[i] < h.Counts[i-1] {
			t.Fatalf("buckets not cumulative: %v", h.Counts)
		}
	}
	if h.Counts[len(h.Counts)-1] > h.Count || h.Sum <= 0 {
		t.Fatalf("histogram %+v", h)
	}
}
