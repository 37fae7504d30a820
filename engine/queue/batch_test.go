package queue

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSubmitBatch(t *testing.T) {
	e := newEnv(t, nil)
	first := e.submit(spec("first"))
	e.clk.Advance(time.Second)

	specs := []Spec{spec("a"), {Command: []string{"b"}, Priority: intp(3)}, {Name: "c", Command: []string{"c"}}}
	got, err := e.q.SubmitBatch(specs, "operator:batch")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d containers, want 3", len(got))
	}
	seen := map[string]bool{first.ID: true}
	for i, c := range got {
		if seen[c.ID] {
			t.Fatalf("duplicate id %s", c.ID)
		}
		seen[c.ID] = true
		if c.Seq != first.Seq+1+uint64(i) || !c.CreatedAt.Equal(e.clk.Now()) || c.State != Queued {
			t.Errorf("container %d: %+v", i, c)
		}
		wantEqual(t, "Get", e.get(c.ID), c)
	}
	if got[1].Priority != 3 || got[2].Name != "c" || got[0].Name != got[0].ID {
		t.Errorf("specs not applied: %+v", got)
	}
	evs := e.events()[1:]
	if len(evs) != 3 {
		t.Fatalf("%d events, want 3", len(evs))
	}
	for i, ev := range evs {
		if ev.Action != "submit" || ev.Target != got[i].ID || ev.Actor != "operator:batch" {
			t.Errorf("event %d: %+v", i, ev)
		}
	}

	// One invalid spec stores nothing, and the error names it.
	before := e.snapshot()
	evBefore := e.events()
	_, err = e.q.SubmitBatch([]Spec{spec("ok"), {Command: []string{"x"}, RuntimeConstraints: Constraints{RAM: -1}}}, "op")
	wantFieldError(t, err, "runtime_constraints.ram")
	if !strings.Contains(err.Error(), "container 1") {
		t.Errorf("error %q does not name the index", err)
	}
	wantEqual(t, "records", e.snapshot(), before)
	wantEqual(t, "events", e.events(), evBefore)

	// An empty batch is a no-op.
	if cs, err := e.q.SubmitBatch(nil, "op"); err != nil || len(cs) != 0 {
		t.Fatalf("empty batch = %v, %v", cs, err)
	}

	e.reopen()
	wantEqual(t, "records after reopen", e.snapshot(), before)
	wantEqual(t, "events after reopen", e.events(), evBefore)
	e.close()
	keys := e.held().ids
	slices.Sort(keys)
	var want []string
	for id := range before {
		want = append(want, id)
	}
	slices.Sort(want)
	wantEqual(t, "keys in file", keys, want)
}

// AppendEvent is visible at once and written with the next flush.
func TestAppendEvent(t *testing.T) {
	e := newEnv(t, nil)
	e.q.AppendEvent("pool", "probe", "i-1", "idle", "")
	if got := e.lastEvent(); got.Seq != 1 || got.Action != "idle" || !got.Time.Equal(t0) {
		t.Fatalf("event %+v", got)
	}
	e.q.mu.Lock()
	pending := len(e.q.newEvents)
	e.q.mu.Unlock()
	if pending != 1 {
		t.Fatalf("%d unwritten events, want 1", pending)
	}
	e.pass(func(*Tx) {})
	e.q.mu.Lock()
	pending = len(e.q.newEvents)
	e.q.mu.Unlock()
	if pending != 0 {
		t.Fatalf("a pass left %d events unwritten", pending)
	}
	e.q.AppendEvent("pool", "probe", "i-1", "busy", "")
	evs := e.events()
	e.reopen() // Close flushes
	wantEqual(t, "events after reopen", e.events(), evs)
}

func TestRunningAtStart(t *testing.T) {
	e := newEnv(t, nil)
	var ids []string
	for i := range 6 {
		ids = append(ids, e.submit(Spec{Command: []string{"x"}, Priority: intp(i)}).ID)
	}
	e.pass(func(tx *Tx) {
		if n := len(tx.RunningAtStart()); n != 0 {
			t.Errorf("RunningAtStart has %d, want 0", n)
		}
	})
	e.toState(ids[1], Running)
	e.toState(ids[4], Running)
	e.toState(ids[5], Locked)
	e.pass(func(tx *Tx) {
		var got []string
		for _, c := range tx.RunningAtStart() {
			got = append(got, c.ID)
		}
		wantEqual(t, "running prefix", got, []string{ids[4], ids[1]})
		// Transitions during the pass do not change it.
		if err := tx.Finish(tx.Get(ids[4]), 0, tx.Now()); err != nil {
			t.Fatal(err)
		}
		if err := tx.Run(tx.Get(ids[5]), "i-3", "t"); err != nil {
			t.Fatal(err)
		}
		if n := len(tx.RunningAtStart()); n != 2 {
			t.Errorf("RunningAtStart changed during the pass: %d", n)
		}
	})
	e.pass(func(tx *Tx) {
		var got []string
		for _, c := range tx.RunningAtStart() {
			got = append(got, c.ID)
		}
		wantEqual(t, "running prefix, next pass", got, []string{ids[5], ids[1]})
	})
}

func TestRequestKill(t *testing.T) {
	e := newEnv(t, nil)
	id := e.submit(spec("x")).ID
	e.toState(id, Running)
	notes, stop := e.q.Subscribe()
	defer stop()
	e.mustTx(id, func(tx *Tx, c *Container) error {
		tx.RequestKill(c, "priority set to 0")
		tx.RequestKill(c, "second request")
		return nil
	})
	select {
	case <-notes:
	default:
		t.Error("RequestKill did not notify")
	}
	e.reopen()
	c := e.get(id)
	if c.State != Running || !c.KillRequested || c.KillReason != "priority set to 0" {
		t.Fatalf("after RequestKill: %+v", c)
	}
	e.mustTx(id, func(tx *Tx, c *Container) error { return tx.Finish(c, 137, tx.Now()) })
	c = e.get(id)
	if c.State != Cancelled || c.ReasonCode != ReasonKilled || c.Reason != "priority set to 0" {
		t.Fatalf("after Finish: %+v", c)
	}
}
