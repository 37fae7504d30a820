package queue

import (
	"fmt"
	"slices"
	"testing"
)

// TestEachLabelledFollowsTheQueue: the containers listed under a label
// are those that have it, in submission order from any Seq, through
// submits, drops beyond keep_finished (enough to compact a list) and a
// reopen; a label nobody has lists nothing.
func TestEachLabelledFollowsTheQueue(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.KeepFinished = 2 })
	var ids []string
	for i := range 30 {
		labels := map[string]string{"g": fmt.Sprint(i % 3)}
		if i%2 == 0 {
			labels["even"] = "yes"
		}
		ids = append(ids, e.submit(Spec{Command: []string{"true"}, Labels: labels}).ID)
	}
	check := func(what string) {
		t.Helper()
		for _, l := range []labelKey{{"g", "0"}, {"g", "1"}, {"even", "yes"}, {"g", "7"}, {"none", "x"}} {
			for _, from := range []uint64{0, 5, 17, 1000} {
				var want, got []string
				e.q.EachFrom(from, func(c *Container) bool {
					if v, ok := c.Labels[l.key]; ok && v == l.value {
						want = append(want, c.ID)
					}
					return true
				})
				if !e.q.EachLabelled(l.key, l.value, from, func(c *Container) bool {
					got = append(got, c.ID)
					return true
				}) {
					t.Fatalf("%s: label %s=%s not indexed", what, l.key, l.value)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: label %s=%s from %d lists %v, want %v", what, l.key, l.value, from, got, want)
				}
			}
		}
	}
	check("after submits")
	// Every g=0 container but the last two ends and is dropped: its list
	// is more than half dead, and compacted.
	for i := 0; i < 24; i += 3 {
		e.toState(ids[i], Cancelled)
	}
	if err := e.q.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.q.Len(); n != 30-6 {
		t.Fatalf("%d containers after the drops, want 24", n)
	}
	check("after drops")
	e.q.mu.Lock()
	l := e.q.labels.lists[labelKey{"g", "0"}]
	listed := len(l.seqs)
	e.q.mu.Unlock()
	if listed > 6 {
		t.Errorf("the g=0 list holds %d Seqs after 6 of its 10 were dropped, want it compacted to at most 6", listed)
	}
	e.q = e.reopen()
	check("after a reopen")
}

// TestEachLabelledPastTheLimit: past labelIndexMax labels, a label not yet
// listed is not indexed (EachLabelled says so), while those listed before
// still list every container that has them.
func TestEachLabelledPastTheLimit(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.Store.NoSync = true })
	specs := make([]Spec, labelIndexMax+1)
	for i := range specs {
		specs[i] = Spec{Command: []string{"true"}, Labels: map[string]string{"id": fmt.Sprint(i)}}
	}
	if _, err := e.q.SubmitBatch(specs, "test"); err != nil {
		t.Fatal(err)
	}
	last := e.submit(Spec{Command: []string{"true"}, Labels: map[string]string{"id": "0"}})
	n := 0
	if !e.q.EachLabelled("id", "0", 0, func(c *Container) bool { n++; return true }) || n != 2 {
		t.Fatalf("id=0, listed before the limit: %d containers, want 2 (the last %s)", n, last.ID)
	}
	called := false
	if e.q.EachLabelled("id", fmt.Sprint(labelIndexMax), 0, func(c *Container) bool { called = true; return true }) || called {
		t.Fatal("a label past the limit is reported indexed")
	}
}
