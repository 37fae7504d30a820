package queue

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/statediagram"
	"dispatch-tui/engine/view"
)

// TestStateDiagram holds states.txt to what a container's life needs, and
// CanTransition to states.txt.
// TestStateDiagramDocumented: docs/design.md shows the container state
// diagram as states.txt has it.
func TestStateDiagramDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	body := statediagram.Body(stateDiagram)
	if body == "" || !strings.Contains(string(doc), "```\n"+body+"\n```") {
		t.Errorf("docs/design.md does not show states.txt's diagram as it is; paste this block there:\n%s", body)
	}
}

func TestStateDiagram(t *testing.T) {
	onDisk, err := os.ReadFile("states.txt")
	if err != nil {
		t.Fatal(err)
	}
	if string(onDisk) != stateDiagram {
		t.Fatal("embedded diagram differs from states.txt")
	}
	d, err := statediagram.Parse("states.txt", string(onDisk), containerStates)
	if err != nil {
		t.Fatal(err)
	}
	if next := d.Next(statediagram.Entering); !slices.Equal(next, []string{string(Queued)}) {
		t.Errorf("a submitted container enters as %v, want only Queued", next)
	}
	fromEntry := d.Reachable(statediagram.Entering)
	for _, s := range States {
		if !fromEntry[string(s)] {
			t.Errorf("%s cannot be reached from [*]", s)
		}
		if next := d.Next(string(s)); s.Final() != (len(next) == 0) {
			t.Errorf("%s: Final() = %v but the diagram leads on to %v", s, s.Final(), next)
		}
		if !s.Final() && !d.Reachable(string(s))[string(Cancelled)] {
			t.Errorf("%s can never be cancelled", s)
		}
		for _, to := range States {
			if got, want := CanTransition(s, to), d.Allows(string(s), string(to)); got != want {
				t.Errorf("CanTransition(%s, %s) = %v, the diagram says %v", s, to, got, want)
			}
		}
		if CanTransition(s, "Bogus") || CanTransition("Bogus", s) {
			t.Errorf("unknown state accepted with %s", s)
		}
	}
}

// txOp is one Tx method applied to a container.
type txOp struct {
	name string
	to   State // the state a TransitionError names
	do   func(e *env, tx *Tx, c *Container) error
	// check verifies the fields the method sets on success.
	check func(t *testing.T, e *env, before, after view.Container)
}

var adoptStart = t0.Add(-time.Hour)

var txOps = []txOp{
	{"Lock", Locked,
		func(e *env, tx *Tx, c *Container) error { return tx.Lock(c, "big") },
		func(t *testing.T, e *env, before, after view.Container) {
			if after.InstanceType != "big" || !after.LockedAt.Equal(e.clk.Now()) {
				t.Errorf("Lock: type %q locked at %v", after.InstanceType, after.LockedAt)
			}
		}},
	{"Unlock", Queued,
		func(e *env, tx *Tx, c *Container) error { return tx.Unlock(c) },
		func(t *testing.T, e *env, before, after view.Container) {
			if after.InstanceType != "" || after.InstanceID != "" || !after.LockedAt.IsZero() {
				t.Errorf("Unlock left %q %q %v", after.InstanceType, after.InstanceID, after.LockedAt)
			}
		}},
	{"Run", Running,
		func(e *env, tx *Tx, c *Container) error { return tx.Run(c, "i-2", "big") },
		func(t *testing.T, e *env, before, after view.Container) {
			if after.Attempts != before.Attempts+1 || after.InstanceID != "i-2" || after.InstanceType != "big" ||
				!after.StartedAt.Equal(e.clk.Now()) || after.ExitCode != nil {
				t.Errorf("Run: %+v", after)
			}
		}},
	{"Adopt", Running,
		func(e *env, tx *Tx, c *Container) error { return tx.Adopt(c, "i-2", "big", adoptStart) },
		func(t *testing.T, e *env, before, after view.Container) {
			if after.Attempts != before.Attempts+1 || after.InstanceID != "i-2" || after.InstanceType != "big" ||
				!after.StartedAt.Equal(adoptStart) {
				t.Errorf("Adopt: %+v", after)
			}
		}},
	{"Finish", Complete,
		func(e *env, tx *Tx, c *Container) error { return tx.Finish(c, 0, e.clk.Now().Add(-time.Second)) },
		func(t *testing.T, e *env, before, after view.Container) {
			if after.ExitCode == nil || *after.ExitCode != 0 || !after.FinishedAt.Equal(e.clk.Now().Add(-time.Second)) {
				t.Errorf("Finish: %+v", after)
			}
		}},
	{"Requeue", Queued,
		func(e *env, tx *Tx, c *Container) error { return tx.Requeue(c, "instance died") },
		func(t *testing.T, e *env, before, after view.Container) {
			if after.Reason != "instance died" || after.ReasonCode != ReasonRequeued || after.InstanceID != "" ||
				after.InstanceType != "" || after.Attempts != before.Attempts {
				t.Errorf("Requeue: %+v", after)
			}
		}},
	{"Cancel", Cancelled,
		func(e *env, tx *Tx, c *Container) error { return tx.Cancel(c, ReasonKilled, "killed by operator") },
		func(t *testing.T, e *env, before, after view.Container) {
			if after.Reason != "killed by operator" || after.ReasonCode != ReasonKilled || !after.FinishedAt.Equal(e.clk.Now()) {
				t.Errorf("Cancel: %+v", after)
			}
		}},
}

// legalOps lists, for each starting state, the Tx methods that succeed and
// the state they lead to. Everything else is a TransitionError.
var legalOps = map[State]map[string]State{
	Queued:  {"Lock": Locked, "Run": Running, "Adopt": Running, "Cancel": Cancelled},
	Locked:  {"Unlock": Queued, "Run": Running, "Adopt": Running, "Cancel": Cancelled},
	Running: {"Finish": Complete, "Requeue": Queued, "Cancel": Cancelled},
}

func TestTxTransitions(t *testing.T) {
	for _, from := range States {
		for _, op := range txOps {
			want, legal := legalOps[from][op.name]
			name := string(from) + "/" + op.name
			if !legal {
				name += "/illegal"
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, nil)
				other := e.submit(spec("other")).ID // an unrelated container stays untouched
				id := e.submit(Spec{Command: []string{"x"}, Priority: intp(2)}).ID
				e.clk.Advance(time.Minute)
				e.toState(id, from)
				e.clk.Advance(time.Minute)

				before := e.get(id)
				beforeAll := e.snapshot()
				evBefore := e.events()
				total, active := e.q.Len()
				notes, stop := e.q.Subscribe()
				defer stop()

				err := e.txDo(id, func(tx *Tx, c *Container) error { return op.do(e, tx, c) })

				if !legal {
					var te *TransitionError
					if !errors.As(err, &te) {
						t.Fatalf("%s on %s: error %v, want *TransitionError", op.name, from, err)
					}
					if te.ID != id || te.From != from || te.To != op.to {
						t.Errorf("TransitionError = %+v, want %s %s -> %s", te, id, from, op.to)
					}
					wantEqual(t, "records in memory", e.snapshot(), beforeAll)
					wantEqual(t, "events", e.events(), evBefore)
					if gt, ga := e.q.Len(); gt != total || ga != active {
						t.Errorf("Len = %d, %d; want %d, %d", gt, ga, total, active)
					}
					select {
					case <-notes:
						t.Error("an illegal transition notified subscribers")
					default:
					}
					e.reopen()
					wantEqual(t, "records on disk", e.snapshot(), beforeAll)
					wantEqual(t, "events on disk", e.events(), evBefore)
					return
				}

				if err != nil {
					t.Fatalf("%s on %s: %v", op.name, from, err)
				}
				after := e.get(id)
				if after.State != want {
					t.Fatalf("state = %s, want %s", after.State, want)
				}
				op.check(t, e, before, after)
				wantEqual(t, "unrelated container", e.get(other), beforeAll[other])
				ev := e.lastEvent()
				wantEqual(t, "state event", ev, Event{
					Seq: evBefore[len(evBefore)-1].Seq + 1, Time: e.clk.Now(), Actor: "scheduler",
					Kind: "state", Target: id, Action: string(want), Reason: after.Reason,
				})
				wantActive := active
				if want.Final() {
					wantActive--
				}
				if gt, ga := e.q.Len(); gt != total || ga != wantActive {
					t.Errorf("Len = %d, %d; want %d, %d", gt, ga, total, wantActive)
				}
				select {
				case <-notes:
				default:
					t.Error("no notification")
				}
				if ids := e.activeIDs(); slices.Contains(ids, id) == want.Final() {
					t.Errorf("Active() = %v after moving %s to %s", ids, id, want)
				}
				e.reopen()
				wantEqual(t, "record on disk", e.get(id), after)
				wantEqual(t, "events on disk", e.events()[len(evBefore)], ev)
			})
		}
	}
}

// A Running container whose process is being killed cannot be unlocked: the
// only way back to Queued is Requeue, which counts the attempt.
func TestUnlockRunningRefused(t *testing.T) {
	e := newEnv(t, nil)
	id := e.submit(spec("x")).ID
	e.toState(id, Running)
	err := e.txDo(id, func(tx *Tx, c *Container) error { return tx.Unlock(c) })
	var te *TransitionError
	if !errors.As(err, &te) || te.From != Running || te.To != Queued {
		t.Fatalf("Unlock(Running) = %v", err)
	}
	if c := e.get(id); c.State != Running || c.InstanceID != "i-1" {
		t.Fatalf("Unlock(Running) changed the record: %+v", c)
	}
}

func TestSetLockedType(t *testing.T) {
	e := newEnv(t, nil)
	id := e.submit(spec("x")).ID
	e.toState(id, Locked)
	e.pass(func(tx *Tx) { tx.SetLockedType(tx.Get(id), "other") })
	if got := e.get(id).InstanceType; got != "other" {
		t.Fatalf("InstanceType = %q", got)
	}
	e.reopen()
	if got := e.get(id).InstanceType; got != "other" {
		t.Fatalf("InstanceType after reopen = %q", got)
	}
}

func TestFinish(t *testing.T) {
	tests := []struct {
		name        string
		policy      string
		maxAttempts int
		runs        int // attempts made before the Finish under test (each failing with exit 1)
		kill        string
		exit        int
		wantState   State
		wantCode    ReasonCode
		wantReason  string
		wantExit    *int
	}{
		{name: "success", policy: RestartNever, maxAttempts: 3, exit: 0,
			wantState: Complete, wantExit: intp(0)},
		{name: "success on-failure", policy: RestartOnFailure, maxAttempts: 3, exit: 0,
			wantState: Complete, wantExit: intp(0)},
		{name: "failure never", policy: RestartNever, maxAttempts: 3, exit: 2,
			wantState: Complete, wantExit: intp(2)},
		{name: "failure on-failure retried", policy: RestartOnFailure, maxAttempts: 3, exit: 2,
			wantState: Queued, wantCode: ReasonRequeued, wantReason: "exit code 2, retrying"},
		{name: "failure on-failure second attempt retried", policy: RestartOnFailure, maxAttempts: 3, runs: 1, exit: 2,
			wantState: Queued, wantCode: ReasonRequeued, wantReason: "exit code 2, retrying"},
		{name: "failure on-failure at max", policy: RestartOnFailure, maxAttempts: 3, runs: 2, exit: 2,
			wantState: Complete, wantExit: intp(2)},
		{name: "failure on-failure max 1", policy: RestartOnFailure, maxAttempts: 1, exit: 139,
			wantState: Complete, wantExit: intp(139)},
		{name: "kill requested", policy: RestartOnFailure, maxAttempts: 3, kill: "operator said so", exit: 143,
			wantState: Cancelled, wantCode: ReasonKilled, wantReason: "operator said so", wantExit: intp(143)},
		{name: "kill requested default reason, exit 0", policy: RestartNever, maxAttempts: 3, kill: "-", exit: 0,
			wantState: Cancelled, wantCode: ReasonKilled, wantReason: "killed by operator", wantExit: intp(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			id := e.submit(Spec{Command: []string{"x"}, RestartPolicy: tt.policy, MaxAttempts: tt.maxAttempts}).ID
			for range tt.runs {
				e.toState(id, Running)
				e.mustTx(id, func(tx *Tx, c *Container) error { return tx.Finish(c, 1, e.clk.Now()) })
				if s := e.get(id).State; s != Queued {
					t.Fatalf("retry setup: state %s", s)
				}
			}
			e.toState(id, Running)
			if tt.kill != "" {
				reason := tt.kill
				if reason == "-" {
					reason = ""
				}
				if _, err := e.q.Kill(id, "operator:alice", reason); err != nil {
					t.Fatal(err)
				}
			}
			e.clk.Advance(time.Minute)
			finishedAt := e.clk.Now().Add(-10 * time.Second)
			e.mustTx(id, func(tx *Tx, c *Container) error { return tx.Finish(c, tt.exit, finishedAt) })

			c := e.get(id)
			if c.State != tt.wantState || c.ReasonCode != tt.wantCode || c.Reason != tt.wantReason {
				t.Fatalf("got %s %q %q, want %s %q %q", c.State, c.ReasonCode, c.Reason, tt.wantState, tt.wantCode, tt.wantReason)
			}
			wantEqual(t, "exit code", c.ExitCode, tt.wantExit)
			if c.Attempts != tt.runs+1 {
				t.Errorf("Attempts = %d, want %d", c.Attempts, tt.runs+1)
			}
			switch tt.wantState {
			case Complete:
				if !c.FinishedAt.Equal(finishedAt) {
					t.Errorf("FinishedAt = %v, want %v", c.FinishedAt, finishedAt)
				}
			case Cancelled:
				if c.FinishedAt.IsZero() {
					t.Error("FinishedAt not set")
				}
			case Queued:
				if c.InstanceID != "" || c.InstanceType != "" || !c.FinishedAt.IsZero() {
					t.Errorf("requeued record: %+v", c)
				}
			}
			ev := e.lastEvent()
			if ev.Kind != "state" || ev.Action != string(tt.wantState) || ev.Reason != tt.wantReason || ev.Target != id {
				t.Errorf("event = %+v", ev)
			}
			e.reopen()
			wantEqual(t, "after reopen", e.get(id), c)
		})
	}
}

// Retrying under on-failure runs the container exactly max_attempts times.
func TestFinishRetryCycle(t *testing.T) {
	e := newEnv(t, nil)
	id := e.submit(Spec{Command: []string{"x"}, RestartPolicy: RestartOnFailure, MaxAttempts: 4}).ID
	var states []State
	for range 10 {
		if e.get(id).State.Final() {
			break
		}
		e.toState(id, Locked)
		e.toState(id, Running)
		e.mustTx(id, func(tx *Tx, c *Container) error { return tx.Finish(c, 7, e.clk.Now()) })
		states = append(states, e.get(id).State)
	}
	wantEqual(t, "states", states, []State{Queued, Queued, Queued, Complete})
	c := e.get(id)
	if c.Attempts != 4 || c.ExitCode == nil || *c.ExitCode != 7 || c.Reason != "" || c.ReasonCode != ReasonNone {
		t.Fatalf("final record: %+v", c)
	}
}

func TestRequeue(t *testing.T) {
	tests := []struct {
		name        string
		maxAttempts int
		runs        int // attempts before the Requeue under test (each requeued)
		kill        bool
		wantState   State
		wantCode    ReasonCode
		wantReason  string
	}{
		{"below max", 3, 0, false, Queued, ReasonRequeued, "instance i-1 died"},
		{"one below max", 3, 1, false, Queued, ReasonRequeued, "instance i-1 died"},
		{"at max", 3, 2, false, Cancelled, ReasonMaxAttempts, "gave up after 3 attempts: instance i-1 died"},
		{"max 1", 1, 0, false, Cancelled, ReasonMaxAttempts, "gave up after 1 attempts: instance i-1 died"},
		{"kill requested", 3, 0, true, Cancelled, ReasonKilled, "killed by operator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			id := e.submit(Spec{Command: []string{"x"}, MaxAttempts: tt.maxAttempts}).ID
			requeue := func() {
				e.mustTx(id, func(tx *Tx, c *Container) error { return tx.Requeue(c, "instance i-1 died") })
			}
			for range tt.runs {
				e.toState(id, Running)
				requeue()
			}
			e.toState(id, Running)
			if tt.kill {
				if _, err := e.q.Kill(id, "operator:alice", ""); err != nil {
					t.Fatal(err)
				}
			}
			requeue()
			c := e.get(id)
			if c.State != tt.wantState || c.ReasonCode != tt.wantCode || c.Reason != tt.wantReason {
				t.Fatalf("got %s %q %q, want %s %q %q", c.State, c.ReasonCode, c.Reason, tt.wantState, tt.wantCode, tt.wantReason)
			}
			if c.Attempts != tt.runs+1 {
				t.Errorf("Attempts = %d, want %d", c.Attempts, tt.runs+1)
			}
			if tt.wantState == Cancelled && !c.FinishedAt.Equal(e.clk.Now()) {
				t.Errorf("FinishedAt = %v", c.FinishedAt)
			}
			if ev := e.lastEvent(); ev.Action != string(tt.wantState) || ev.Reason != tt.wantReason {
				t.Errorf("event = %+v", ev)
			}
			e.reopen()
			wantEqual(t, "after reopen", e.get(id), c)
		})
	}
}

// A container that runs again after a requeue no longer carries the
// requeue reason.
func TestRunClearsRequeueReason(t *testing.T) {
	for _, adopt := range []bool{false, true} {
		e := newEnv(t, nil)
		id := e.submit(spec("x")).ID
		e.toState(id, Running)
		e.mustTx(id, func(tx *Tx, c *Container) error { return tx.Requeue(c, "instance died") })
		e.mustTx(id, func(tx *Tx, c *Container) error {
			if adopt {
				return tx.Adopt(c, "i-2", "t", e.clk.Now())
			}
			return tx.Run(c, "i-2", "t")
		})
		c := e.get(id)
		if c.Reason != "" || c.ReasonCode != ReasonNone || c.Attempts != 2 {
			t.Errorf("adopt=%v: running record %+v", adopt, c)
		}
		if ev := e.lastEvent(); ev.Action != string(Running) || ev.Reason != "" {
			t.Errorf("adopt=%v: event %+v", adopt, ev)
		}
	}
}

func TestActiveOrder(t *testing.T) {
	e := newEnv(t, nil)
	sub := func(name string, prio int, at time.Duration) string {
		e.clk.Set(t0.Add(at))
		return e.submit(Spec{Name: name, Command: []string{name}, Priority: intp(prio)}).ID
	}
	ids := map[string]string{}
	ids["a"] = sub("a", 1, 0)
	ids["b"] = sub("b", 5, time.Second)
	ids["c"] = sub("c", 5, 2*time.Second)
	ids["d"] = sub("d", 1, 0)               // same first_seen as a, later seq
	ids["e"] = sub("e", 5, -10*time.Second) // submitted last but seen first
	ids["f"] = sub("f", 0, -time.Hour)
	ids["g"] = sub("g", 1, 0) // same instant again
	e.clk.Set(t0.Add(time.Hour))

	names := func(got []string) []string {
		byID := map[string]string{}
		for n, id := range ids {
			byID[id] = n
		}
		var out []string
		for _, id := range got {
			out = append(out, byID[id])
		}
		return out
	}
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"initial", func() {}, []string{"e", "b", "c", "a", "d", "g", "f"}},
		{"lock a, run f; order unchanged within the pass", func() {
			e.pass(func(tx *Tx) {
				before := slices.Clone(tx.Active())
				if err := tx.Lock(tx.Get(ids["a"]), "t"); err != nil {
					t.Fatal(err)
				}
				if err := tx.Run(tx.Get(ids["f"]), "i-1", "t"); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(tx.Active(), before) {
					t.Error("Active reordered during the pass")
				}
			})
		}, []string{"f", "a", "e", "b", "c", "d", "g"}},
		{"priority of g raised", func() { mustVerb(t)(e.q.SetPriority(ids["g"], 9, "op", "")) },
			[]string{"f", "a", "g", "e", "b", "c", "d"}},
		{"lock b; locked ones by priority", func() {
			e.mustTx(ids["b"], func(tx *Tx, c *Container) error { return tx.Lock(c, "t") })
		}, []string{"f", "b", "a", "g", "e", "c", "d"}},
		{"priority of a raised (locked)", func() { mustVerb(t)(e.q.SetPriority(ids["a"], 6, "op", "")) },
			[]string{"f", "a", "b", "g", "e", "c", "d"}},
		{"priority of c lowered to 0", func() { mustVerb(t)(e.q.SetPriority(ids["c"], 0, "op", "")) },
			[]string{"f", "a", "b", "g", "e", "d", "c"}},
		{"run e; running by priority", func() {
			e.mustTx(ids["e"], func(tx *Tx, c *Container) error { return tx.Run(c, "i-2", "t") })
		}, []string{"e", "f", "a", "b", "g", "d", "c"}},
		{"finish f, cancel d", func() {
			e.pass(func(tx *Tx) {
				if err := tx.Finish(tx.Get(ids["f"]), 0, tx.Now()); err != nil {
					t.Fatal(err)
				}
				if err := tx.Cancel(tx.Get(ids["d"]), ReasonNoFit, "too big"); err != nil {
					t.Fatal(err)
				}
			})
		}, []string{"e", "a", "b", "g", "c"}},
		{"kill g (queued), unlock b, requeue e", func() {
			mustVerb(t)(e.q.Kill(ids["g"], "op", ""))
			e.mustTx(ids["b"], func(tx *Tx, c *Container) error { return tx.Unlock(c) })
			e.mustTx(ids["e"], func(tx *Tx, c *Container) error { return tx.Requeue(c, "died") })
		}, []string{"a", "e", "b", "c"}},
		{"hold does not reorder", func() { mustVerb(t)(e.q.Hold(ids["e"], "op", "")) },
			[]string{"a", "e", "b", "c"}},
		{"same priority kept stable", func() { mustVerb(t)(e.q.SetPriority(ids["b"], 5, "op", "")) },
			[]string{"a", "e", "b", "c"}},
	}
	for _, st := range steps {
		st.do()
		wantEqual(t, st.name, names(e.activeIDs()), st.want)
		if _, active := e.q.Len(); active != len(st.want) {
			t.Fatalf("%s: Len active = %d, want %d", st.name, active, len(st.want))
		}
	}
	last := e.activeIDs()
	e.reopen()
	wantEqual(t, "order after reopen", e.activeIDs(), last)
}

func mustVerb(t *testing.T) func(view.Container, error) {
	return func(_ view.Container, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestCompareContainers(t *testing.T) {
	base := Container{State: Queued, Priority: 1, FirstSeenAt: t0, ContainerTail: view.ContainerTail{Seq: 5}}
	tests := []struct {
		name string
		a, b Container
		want int
	}{
		{"equal", base, base, 0},
		{"running before locked", Container{State: Running}, Container{State: Locked, Priority: 99}, -1},
		{"locked before queued", Container{State: Locked}, Container{State: Queued, Priority: 99}, -1},
		{"queued after running", Container{State: Queued, Priority: 9}, Container{State: Running}, 1},
		{"higher priority first", Container{State: Queued, Priority: 2}, base, -1},
		{"earlier first seen first", Container{State: Queued, Priority: 1, FirstSeenAt: t0.Add(-1), ContainerTail: view.ContainerTail{Seq: 9}}, base, -1},
		{"lower seq first", Container{State: Queued, Priority: 1, FirstSeenAt: t0, ContainerTail: view.ContainerTail{Seq: 4}}, base, -1},
		{"higher seq later", Container{State: Queued, Priority: 1, FirstSeenAt: t0, ContainerTail: view.ContainerTail{Seq: 6}}, base, 1},
	}
	for _, tt := range tests {
		if got := compareContainers(&tt.a, &tt.b); got != tt.want {
			t.Errorf("%s: compare = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// storedState reads a container's state from the store itself (the
// queue stays open).
func (e *env) storedState(t *testing.T, c view.Container) State {
	t.Helper()
	var rec Container
	if err := json.Unmarshal(e.held().records[c.Seq], &rec); err != nil {
		t.Fatal(err)
	}
	return rec.State
}

// PassThen runs its second function with the queue unlocked (it may read
// the queue) and the pass's change made in memory but not yet stored; the
// pass is stored once it returns. A nil one is Pass.
func TestPassThen(t *testing.T) {
	tests := []struct {
		name     string
		unlocked bool
	}{{"with a function", true}, {"nil", false}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			c := e.submit(spec("a"))
			ran := false
			var then func()
			if tc.unlocked {
				then = func() {
					ran = true
					if got := e.get(c.ID).State; got != Locked { // locks the queue
						t.Errorf("in memory: %s, want Locked", got)
					}
					if got := e.storedState(t, c); got != Queued {
						t.Errorf("stored before the write: %s, want Queued", got)
					}
				}
			}
			err := e.q.PassThen(func(tx *Tx) {
				if err := tx.Lock(tx.Get(c.ID), "small"); err != nil {
					t.Fatal(err)
				}
			}, then)
			if err != nil {
				t.Fatal(err)
			}
			if ran != tc.unlocked {
				t.Fatalf("ran %v, want %v", ran, tc.unlocked)
			}
			if got := e.storedState(t, c); got != Locked {
				t.Fatalf("stored after the pass: %s, want Locked", got)
			}
		})
	}
}
