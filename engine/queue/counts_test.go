package queue

import "testing"

// walkCounts counts the containers by state the slow way.
func walkCounts(q *Queue) map[State]int {
	out := map[State]int{}
	q.Each(func(c *Container) bool {
		out[c.State]++
		return true
	})
	return out
}

// Counts must equal a walk of every container through submits, every
// transition, the kill verb, drops beyond KeepFinished and a reopen.
func TestCountsMatchWalk(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.KeepFinished = 4 })
	check := func(when string) {
		t.Helper()
		wantEqual(t, "counts "+when, e.q.Counts(), walkCounts(e.q))
	}
	check("empty")
	ids := make([]string, 12)
	for i := range ids {
		ids[i] = e.submit(spec("true")).ID
	}
	check("after submits")
	for i, s := range []State{Locked, Running, Running, Complete, Complete, Cancelled, Complete, Cancelled} {
		e.toState(ids[i], s)
		check("after moving to " + string(s))
	}
	e.mustTx(ids[1], func(tx *Tx, c *Container) error { return tx.Requeue(c, "instance lost") })
	check("after a requeue")
	e.mustTx(ids[0], func(tx *Tx, c *Container) error { return tx.Unlock(c) })
	check("after an unlock")
	if _, err := e.q.Kill(ids[10], "test", ""); err != nil {
		t.Fatal(err)
	}
	check("after killing a queued container")
	if err := e.q.Flush(); err != nil { // drops final containers beyond KeepFinished
		t.Fatal(err)
	}
	check("after dropping finished containers")
	if total, _ := e.q.Len(); total != 12-2 {
		t.Fatalf("%d containers kept, want 10 (6 final, 4 kept)", total)
	}
	e.reopen()
	check("after reopening")
}
