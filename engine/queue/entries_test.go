package queue

import (
	"strconv"
	"testing"
	"time"
)

// TestWaitInLine: the tail walk through the entries beside the order gives
// plain waiting containers consecutive positions, reports the earliest
// first seen among them, and stops at the first container it must leave to
// the record: held, priority 0, labelled, a supervisor, of a shape that
// fits no type, changed earlier in the pass, or at the limit.
func TestWaitInLine(t *testing.T) {
	const n, special = 8, 3
	big := Constraints{VCPUs: 64}
	tests := []struct {
		name   string
		spec   func(s *Spec)                    // the container at index special
		before func(e *env, id string)          // before the pass
		inPass func(tx *Tx, c *Container) error // before WaitInLine
		limit  int                              // 0: none
		want   int
	}{
		{name: "all plain", want: n},
		{name: "limit", limit: 5, want: 5},
		{name: "held", before: func(e *env, id string) {
			if _, err := e.q.Hold(id, "test", ""); err != nil {
				e.tb.Fatal(err)
			}
		}, want: special},
		{name: "released again", before: func(e *env, id string) {
			for _, hold := range []bool{true, false} {
				var err error
				if hold {
					_, err = e.q.Hold(id, "test", "")
				} else {
					_, err = e.q.Release(id, "test", "")
				}
				if err != nil {
					e.tb.Fatal(err)
				}
			}
		}, want: n},
		{name: "labels", spec: func(s *Spec) { s.Scheduling.Constraints = map[string]string{"zone": "a"} }, want: special},
		{name: "supervisor", spec: func(s *Spec) { s.Scheduling.Supervisor = true }, want: special},
		{name: "shape no type fits", spec: func(s *Spec) { s.RuntimeConstraints = big }, want: special},
		{name: "locked earlier in the pass", inPass: func(tx *Tx, c *Container) error {
			return tx.Lock(c, "small")
		}, want: special},
		{name: "priority 0 (sorted last)", spec: func(s *Spec) { s.Priority = intp(0) }, want: n - 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(o *envOptions) { o.Store.NoSync = true })
			var ids []string
			start := e.clk.Now()
			for i := range n {
				s := Spec{Command: []string{"true"}, Priority: intp(5)}
				if i == special && tc.spec != nil {
					tc.spec(&s)
				}
				ids = append(ids, e.submit(s).ID)
				e.clk.Advance(time.Second)
			}
			if tc.before != nil {
				tc.before(e, ids[special])
			}
			var got int
			var oldest time.Time
			e.pass(func(tx *Tx) {
				if tc.inPass != nil {
					if err := tc.inPass(tx, tx.Get(ids[special])); err != nil {
						t.Fatal(err)
					}
				}
				fits := make([]bool, len(tx.Shapes()))
				for id, rc := range tx.Shapes() {
					fits[id] = id > 0 && rc != big
				}
				limit := len(tx.Active())
				if tc.limit > 0 {
					limit = tc.limit
				}
				// In the pass's order (a priority-0 container comes last).
				ids = ids[:0]
				for _, c := range tx.Active() {
					ids = append(ids, c.ID)
				}
				gen := tx.q.gen
				got, oldest = tx.WaitInLine(0, limit, 10, fits)
				if got > 0 && tx.q.gen == gen {
					t.Errorf("positions given, generation unchanged")
				}
				gen = tx.q.gen
				if again, _ := tx.WaitInLine(0, limit, 10, fits); again != got || tx.q.gen != gen {
					t.Errorf("the same walk again: %d, generation changed %v", again, tx.q.gen != gen)
				}
			})
			if got != tc.want {
				t.Fatalf("WaitInLine gave %d positions, want %d", got, tc.want)
			}
			if !oldest.Equal(start) {
				t.Errorf("oldest = %v, want %v", oldest, start)
			}
			for i, id := range ids[:got] {
				v := e.get(id)
				if p := v.Pending; p != (Pending{Code: ReasonPosition, N: 11 + i}) || v.Reason != "position "+strconv.Itoa(11+i)+" in queue" {
					t.Errorf("%d: pending %+v, reason %q", i, p, v.Reason)
				}
			}
			if got < n {
				if v := e.get(ids[got]); v.Pending.Code == ReasonPosition {
					t.Errorf("the container it stopped at got %+v", v.Pending)
				}
			}
		})
	}
}

// TestPendingFollowsTheContainer: a pending reason stays with its
// container when others are submitted or end and when its own priority
// changes, and is gone once it starts.
func TestPendingFollowsTheContainer(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.Store.NoSync = true })
	a := e.submit(Spec{Command: []string{"true"}, Priority: intp(1)}).ID
	b := e.submit(Spec{Command: []string{"true"}, Priority: intp(2)}).ID
	e.pass(func(tx *Tx) {
		tx.SetPending(tx.Get(a), Pending{Code: ReasonPosition, N: 2})
		tx.SetPending(tx.Get(b), Pending{Code: ReasonCreating, Arg: "small"})
	})
	e.submit(Spec{Command: []string{"true"}, Priority: intp(9)}) // ahead of both
	if _, err := e.q.SetPriority(a, 7, "test", ""); err != nil {
		t.Fatal(err)
	}
	e.pass(func(tx *Tx) {}) // re-places them
	if v := e.get(a); v.Pending != (Pending{Code: ReasonPosition, N: 2}) {
		t.Errorf("a: %+v after a submit and its new priority", v.Pending)
	}
	if v := e.get(b); v.Reason != "waiting to create a small instance" {
		t.Errorf("b: reason %q", v.Reason)
	}
	e.mustTx(b, func(tx *Tx, c *Container) error {
		if err := tx.Lock(c, "small"); err != nil {
			return err
		}
		return tx.Run(c, "i-1", "small")
	})
	if v := e.get(b); v.Pending != (Pending{}) || v.Reason != "" {
		t.Errorf("b running: pending %+v, reason %q", v.Pending, v.Reason)
	}
	e.mustTx(b, func(tx *Tx, c *Container) error { return tx.Requeue(c, "lost") })
	if v := e.get(b); v.Pending != (Pending{}) || v.ReasonCode != ReasonRequeued {
		t.Errorf("b requeued: pending %+v, reason %q %q", v.Pending, v.ReasonCode, v.Reason)
	}
}
