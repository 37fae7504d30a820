package queue

import (
	"bytes"
	"dispatch-tui/engine/view"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSubmitValidation(t *testing.T) {
	valid := func() Spec {
		return Spec{
			Name:    "ok",
			Command: []string{"echo", "hi"},
			Env:     map[string]string{"A": "1"},
			RuntimeConstraints: Constraints{
				VCPUs: 1, RAM: 1 << 30, Scratch: 1 << 20, GPUs: 0,
			},
		}
	}
	tests := []struct {
		name  string
		mod   func(*Spec)
		field string
	}{
		{"nil command", func(s *Spec) { s.Command = nil }, "command"},
		{"empty command", func(s *Spec) { s.Command = []string{} }, "command"},
		{"empty program", func(s *Spec) { s.Command = []string{"", "x"} }, "command"},
		{"negative vcpus", func(s *Spec) { s.RuntimeConstraints.VCPUs = -1 }, "runtime_constraints.vcpus"},
		{"negative ram", func(s *Spec) { s.RuntimeConstraints.RAM = -1 }, "runtime_constraints.ram"},
		{"negative scratch", func(s *Spec) { s.RuntimeConstraints.Scratch = -5 }, "runtime_constraints.scratch"},
		{"negative gpus", func(s *Spec) { s.RuntimeConstraints.GPUs = -2 }, "runtime_constraints.gpus"},
		{"negative max_run_time", func(s *Spec) { s.Scheduling.MaxRunTime = Duration(-time.Second) }, "scheduling.max_run_time"},
		{"negative priority", func(s *Spec) { s.Priority = intp(-1) }, "priority"},
		{"negative max_attempts", func(s *Spec) { s.MaxAttempts = -1 }, "max_attempts"},
		{"bad restart_policy", func(s *Spec) { s.RestartPolicy = "always" }, "restart_policy"},
		{"restart_policy wrong case", func(s *Spec) { s.RestartPolicy = "On-Failure" }, "restart_policy"},
		{"empty env name", func(s *Spec) { s.Env = map[string]string{"": "x"} }, "env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			keep := e.submit(valid())
			evBefore := e.events()

			s := valid()
			tt.mod(&s)
			got, err := e.q.Submit(s, "operator:test")
			wantFieldError(t, err, tt.field)
			if !strings.HasPrefix(err.Error(), tt.field+": ") {
				t.Errorf("error text %q does not name %s", err, tt.field)
			}
			wantEqual(t, "returned container", got, view.Container{})
			if total, active := e.q.Len(); total != 1 || active != 1 {
				t.Errorf("Len = %d, %d; want 1, 1", total, active)
			}
			wantEqual(t, "events", e.events(), evBefore)

			e.reopen()
			if total, active := e.q.Len(); total != 1 || active != 1 {
				t.Errorf("after reopen Len = %d, %d; want 1, 1", total, active)
			}
			wantEqual(t, "events after reopen", e.events(), evBefore)
			e.close()
			wantEqual(t, "container keys in file", e.held().ids, []string{keep.ID})
		})
	}
}

func TestSpecValidateAcceptsBoundaries(t *testing.T) {
	for _, s := range []Spec{
		{Command: []string{"true"}},
		{Command: []string{"true"}, Priority: intp(0), RestartPolicy: RestartNever},
		{Command: []string{"true"}, RestartPolicy: RestartOnFailure, MaxAttempts: 1},
		{Command: []string{"true"}, Env: map[string]string{"X": ""}, Scheduling: Scheduling{MaxRunTime: 0}},
	} {
		if err := ValidateSpec(&s); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", s, err)
		}
	}
}

func TestSubmitDefaults(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		// want is checked field by field; ID, Name and Seq are checked separately.
		prio, maxAttempts int
		policy            string
		wantName          string // "" = defaults to the id
	}{
		{"all defaults", Spec{Command: []string{"true"}}, 1, 5, RestartNever, ""},
		{"explicit zero priority", Spec{Command: []string{"true"}, Priority: intp(0)}, 0, 5, RestartNever, ""},
		{"explicit values", Spec{Name: "job", Command: []string{"true"}, Priority: intp(7), MaxAttempts: 2, RestartPolicy: RestartOnFailure}, 7, 2, RestartOnFailure, "job"},
		{"explicit never", Spec{Command: []string{"true"}, RestartPolicy: RestartNever}, 1, 5, RestartNever, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(o *envOptions) { o.DefaultMaxAttempts = 5 })
			e.clk.Advance(90 * time.Second)
			now := e.clk.Now()
			c := e.submit(tt.spec)
			if c.Priority != tt.prio {
				t.Errorf("Priority = %d, want %d", c.Priority, tt.prio)
			}
			if c.MaxAttempts != tt.maxAttempts {
				t.Errorf("MaxAttempts = %d, want %d", c.MaxAttempts, tt.maxAttempts)
			}
			if c.RestartPolicy != tt.policy {
				t.Errorf("RestartPolicy = %q, want %q", c.RestartPolicy, tt.policy)
			}
			wantName := tt.wantName
			if wantName == "" {
				wantName = c.ID
			}
			if c.Name != wantName {
				t.Errorf("Name = %q, want %q", c.Name, wantName)
			}
			if c.State != Queued || c.Held || c.Attempts != 0 || c.ExitCode != nil ||
				c.InstanceID != "" || c.InstanceType != "" || c.Reason != "" || c.ReasonCode != ReasonNone {
				t.Errorf("new container not pristine: %+v", c)
			}
			if !c.CreatedAt.Equal(now) || !c.FirstSeenAt.Equal(now) {
				t.Errorf("CreatedAt %v FirstSeenAt %v, want %v", c.CreatedAt, c.FirstSeenAt, now)
			}
			if !c.StartedAt.IsZero() || !c.FinishedAt.IsZero() || !c.LockedAt.IsZero() {
				t.Errorf("times set on a new container: %+v", c)
			}
			wantEqual(t, "Get", e.get(c.ID), c)
			ev := e.lastEvent()
			wantEqual(t, "submit event", ev, Event{Seq: 1, Time: now, Actor: "operator:test", Kind: "verb", Target: c.ID, Action: "submit"})
		})
	}
}

func TestOpenDefaultOptions(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.DefaultMaxAttempts = 0; o.EventsInMemory = 0; o.Clock = nil })
	c := e.submit(spec("true"))
	if c.MaxAttempts != 3 {
		t.Errorf("MaxAttempts with DefaultMaxAttempts 0 = %d, want 3", c.MaxAttempts)
	}
	if e.q.opts.EventsInMemory != 1000 {
		t.Errorf("EventsInMemory default = %d, want 1000", e.q.opts.EventsInMemory)
	}
	if c.CreatedAt.IsZero() || c.CreatedAt.Location() != time.UTC {
		t.Errorf("real clock CreatedAt = %v, want a UTC time", c.CreatedAt)
	}
}

func TestSubmitIDsUniqueAndRunnerValid(t *testing.T) {
	e := newEnv(t, nil)
	valid := regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	seen := map[string]bool{}
	var lastSeq uint64
	for i := range 200 {
		c := e.submit(spec("true"))
		if !valid.MatchString(c.ID) {
			t.Fatalf("id %q is not runner-valid", c.ID)
		}
		if seen[c.ID] {
			t.Fatalf("duplicate id %q", c.ID)
		}
		seen[c.ID] = true
		if i > 0 && c.Seq <= lastSeq {
			t.Fatalf("seq %d after %d: not increasing", c.Seq, lastSeq)
		}
		lastSeq = c.Seq
	}
	if total, active := e.q.Len(); total != 200 || active != 200 {
		t.Fatalf("Len = %d, %d; want 200, 200", total, active)
	}
}

func TestSubmitCopiesSpec(t *testing.T) {
	e := newEnv(t, nil)
	s := Spec{
		Command:    []string{"echo", "a"},
		Env:        map[string]string{"K": "v"},
		Scheduling: Scheduling{Constraints: map[string]string{"team": "x"}},
	}
	c := e.submit(s)
	s.Command[1] = "changed"
	s.Env["K"] = "changed"
	s.Env["NEW"] = "1"
	s.Scheduling.Constraints["team"] = "changed"
	got := e.get(c.ID)
	wantEqual(t, "Command", got.Command, []string{"echo", "a"})
	wantEqual(t, "Env", got.Env, map[string]string{"K": "v"})
	wantEqual(t, "Labels", got.Scheduling.Constraints, map[string]string{"team": "x"})
}

// A record must read back identically; empty maps are stored as absent, so
// the record holds nil for them from the start.
func TestSubmitEmptyMapsRoundTrip(t *testing.T) {
	e := newEnv(t, nil)
	c := e.submit(Spec{Command: []string{"true"}, Env: map[string]string{}, Scheduling: Scheduling{Constraints: map[string]string{}}})
	e.reopen()
	wantEqual(t, "after reopen", e.get(c.ID), c)
}

func TestGetUnknown(t *testing.T) {
	e := newEnv(t, nil)
	if c, ok := e.q.Get("c-nope"); ok || c.ID != "" {
		t.Fatalf("Get(unknown) = %+v, %v", c, ok)
	}
}

// persistenceFixture builds containers in every state with every field set.
func persistenceFixture(t *testing.T, e *env) []string {
	t.Helper()
	full := Spec{
		Name:    "full",
		Command: []string{"sh", "-c", "exit 3"},
		Env:     map[string]string{"A": "1", "B": "two"},
		Image:   "alpine:3",
		RuntimeConstraints: Constraints{
			VCPUs: 4, RAM: 8 << 30, Scratch: 100 << 30, GPUs: 1,
		},
		Scheduling: Scheduling{
			Preemptible: boolp(true), MaxRunTime: Duration(90 * time.Minute),
			Constraints: map[string]string{"team": "infra"},
		},
		Priority:      intp(9),
		MaxAttempts:   4,
		RestartPolicy: RestartOnFailure,
	}
	var ids []string
	add := func(s Spec) string {
		e.clk.Advance(time.Second)
		c := e.submit(s)
		ids = append(ids, c.ID)
		return c.ID
	}
	queued := add(full)
	if _, err := e.q.Hold(queued, "operator:alice", "wait"); err != nil {
		t.Fatal(err)
	}
	locked := add(full)
	e.toState(locked, Locked)

	running := add(full)
	e.toState(running, Running)
	if _, err := e.q.Kill(running, "operator:bob", "stop it"); err != nil {
		t.Fatal(err)
	}

	retried := add(full) // failed once under on-failure, now Queued again
	e.toState(retried, Running)
	e.clk.Advance(time.Minute)
	e.mustTx(retried, func(tx *Tx, c *Container) error { return tx.Finish(c, 3, e.clk.Now()) })

	adopted := add(spec("sleep", "1"))
	e.mustTx(adopted, func(tx *Tx, c *Container) error {
		return tx.Adopt(c, "i-9", "big", t0.Add(-time.Hour).In(time.FixedZone("X", 3600)))
	})

	complete := add(full)
	e.toState(complete, Running)
	e.clk.Advance(time.Minute)
	e.mustTx(complete, func(tx *Tx, c *Container) error { return tx.Finish(c, 0, e.clk.Now()) })

	failed := add(Spec{Command: []string{"false"}, Priority: intp(0)})
	e.toState(failed, Running)
	e.mustTx(failed, func(tx *Tx, c *Container) error { return tx.Finish(c, 1, e.clk.Now()) })

	cancelled := add(full)
	if _, err := e.q.Kill(cancelled, "operator:alice", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.SetPriority(add(spec("true")), 3, "operator:alice", "bump"); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestPersistenceRoundTrip(t *testing.T) {
	e := newEnv(t, nil)
	ids := persistenceFixture(t, e)
	if err := e.q.SetPaused(true, "operator:alice", "maintenance"); err != nil {
		t.Fatal(err)
	}
	if err := e.q.AddEvent("pool", "cloud_error", "i-3", "create", "quota exceeded"); err != nil {
		t.Fatal(err)
	}

	before := e.snapshot()
	if len(before) != len(ids) {
		t.Fatalf("snapshot has %d records, want %d", len(before), len(ids))
	}
	evBefore := e.events()
	orderBefore := e.activeIDs()
	total, active := e.q.Len()

	e.reopen()
	for _, id := range ids {
		wantEqual(t, "record "+id, e.get(id), before[id])
	}
	wantEqual(t, "snapshot", e.snapshot(), before)
	wantEqual(t, "events", e.events(), evBefore)
	wantEqual(t, "active order", e.activeIDs(), orderBefore)
	if gt, ga := e.q.Len(); gt != total || ga != active {
		t.Errorf("Len after reopen = %d, %d; want %d, %d", gt, ga, total, active)
	}
	if !e.q.Paused() {
		t.Error("paused flag lost")
	}

	// Sequences continue after the stored ones.
	var maxSeq uint64
	for _, c := range before {
		maxSeq = max(maxSeq, c.Seq)
	}
	c := e.submit(spec("true"))
	if c.Seq != maxSeq+1 {
		t.Errorf("seq after reopen = %d, want %d", c.Seq, maxSeq+1)
	}
	if ev := e.lastEvent(); ev.Seq != evBefore[len(evBefore)-1].Seq+1 || ev.Target != c.ID {
		t.Errorf("event after reopen = %+v, want seq %d", ev, evBefore[len(evBefore)-1].Seq+1)
	}

	// Resume survives too.
	if err := e.q.SetPaused(false, "operator:alice", ""); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	if e.q.Paused() {
		t.Error("resume lost")
	}
}

func TestPausedEvents(t *testing.T) {
	e := newEnv(t, nil)
	if e.q.Paused() {
		t.Fatal("new queue is paused")
	}
	for i, p := range []bool{true, true, false} {
		e.clk.Advance(time.Second)
		if err := e.q.SetPaused(p, "operator:alice", "why"); err != nil {
			t.Fatal(err)
		}
		if e.q.Paused() != p {
			t.Fatalf("Paused = %v, want %v", !p, p)
		}
		var seen bool
		e.pass(func(tx *Tx) { seen = tx.Paused() })
		if seen != p {
			t.Fatalf("tx.Paused = %v, want %v", seen, p)
		}
		action := "resume"
		if p {
			action = "pause"
		}
		wantEqual(t, "event", e.lastEvent(), Event{
			Seq: uint64(i + 1), Time: e.clk.Now(), Actor: "operator:alice", Kind: "verb",
			Target: "scheduler", Action: action, Reason: "why",
		})
	}
}

// A pending reason is memory only: it shows in View while the container is
// not final, and is gone after a reopen.
func TestPendingNotPersisted(t *testing.T) {
	e := newEnv(t, nil)
	c := e.submit(spec("true"))
	e.pass(func(tx *Tx) { tx.SetPending(tx.Get(c.ID), Pending{Code: ReasonPosition, N: 4}) })
	got := e.get(c.ID)
	if got.Reason != "position 4 in queue" || got.ReasonCode != ReasonPosition {
		t.Fatalf("view reason = %q %q", got.Reason, got.ReasonCode)
	}
	e.pass(func(tx *Tx) {
		if p := tx.Pending(tx.Get(c.ID)); p != (Pending{Code: ReasonPosition, N: 4}) {
			t.Errorf("Pending() = %+v", p)
		}
	})
	e.reopen()
	got = e.get(c.ID)
	if got.Reason != "" || got.ReasonCode != ReasonNone {
		t.Fatalf("pending reason survived a reopen: %q %q", got.Reason, got.ReasonCode)
	}
}

func TestEventsPaging(t *testing.T) {
	const n = 10
	e := newEnv(t, func(o *envOptions) { o.EventsInMemory = 4 })
	var want []Event
	for i := 1; i <= n; i++ {
		e.clk.Advance(time.Second)
		if err := e.q.AddEvent("pool", "cloud_error", "i-1", "create", "err "+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
		want = append(want, Event{Seq: uint64(i), Time: e.clk.Now(), Actor: "pool", Kind: "cloud_error",
			Target: "i-1", Action: "create", Reason: "err " + string(rune('a'+i))})
	}
	if got := len(e.q.recent); got != 4 {
		t.Fatalf("events in memory = %d, want 4", got)
	}

	page := func(q *Queue, since uint64, limit int) []Event {
		t.Helper()
		evs, err := q.Events(since, limit)
		if err != nil {
			t.Fatalf("Events(%d, %d): %v", since, limit, err)
		}
		return evs
	}
	cases := []struct {
		since uint64
		limit int
		from  string // "file" or "memory"
		want  []Event
	}{
		{0, 3, "file", want[0:3]},
		{3, 3, "file", want[3:6]},
		{5, 100, "file", want[5:10]}, // crosses from the file into the in-memory range
		{6, 3, "memory", want[6:9]},
		{7, 0, "memory", want[7:10]}, // limit <= 0 means the default
		{9, 3, "memory", want[9:10]},
		{10, 3, "memory", nil},
		{50, 3, "memory", nil},
		{0, 0, "file", want},
	}
	check := func(label string, q *Queue) {
		for _, c := range cases {
			got := page(q, c.since, c.limit)
			if len(c.want) == 0 {
				if len(got) != 0 {
					t.Errorf("%s Events(%d, %d) = %+v, want none", label, c.since, c.limit, got)
				}
				continue
			}
			wantEqual(t, label+" page", got, c.want)
		}
		// Walk every page of 3.
		var all []Event
		for since := uint64(0); ; {
			p := page(q, since, 3)
			if len(p) == 0 {
				break
			}
			all = append(all, p...)
			since = p[len(p)-1].Seq
		}
		wantEqual(t, label+" all pages", all, want)
	}
	check("live", e.q)

	// Prove which pages come from memory: with the file closed, memory reads
	// still work and file reads fail.
	e.close()
	closed, cs, err := openOn(e.opts, e.sopts)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.DB().Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		got, err := closed.Events(c.since, c.limit)
		switch c.from {
		case "memory":
			if err != nil {
				t.Errorf("Events(%d, %d) with the file closed: %v (want a memory read)", c.since, c.limit, err)
			} else if len(got) != len(c.want) {
				t.Errorf("Events(%d, %d) from memory: %d events, want %d", c.since, c.limit, len(got), len(c.want))
			}
		case "file":
			if err == nil {
				t.Errorf("Events(%d, %d) with the file closed succeeded: not a file read?", c.since, c.limit)
			}
		}
	}

	e.q = e.open()
	if got := len(e.q.recent); got != 4 {
		t.Fatalf("events in memory after reopen = %d, want 4", got)
	}
	check("reopened", e.q)

	e.close()
	e.opts.EventsInMemory = 1000
	e.q = e.open()
	check("reopened, all in memory", e.q)

	// The ring stays bounded as new events arrive.
	e.close()
	e.opts.EventsInMemory = 4
	e.q = e.open()
	for range 6 {
		if err := e.q.AddEvent("pool", "k", "t", "a", ""); err != nil {
			t.Fatal(err)
		}
	}
	if len(e.q.recent) != 4 || e.q.recent[0].Seq != n+3 || e.q.recent[3].Seq != n+6 {
		t.Fatalf("ring = %+v, want seqs %d..%d", e.q.recent, n+3, n+6)
	}
}

func TestSubscribe(t *testing.T) {
	e := newEnv(t, nil)
	ch, stop := e.q.Subscribe()
	ch2, stop2 := e.q.Subscribe()
	defer stop2()

	expectOne := func(c <-chan struct{}) {
		t.Helper()
		select {
		case _, ok := <-c:
			if !ok {
				t.Fatal("channel closed")
			}
		default:
			t.Fatal("no notification")
		}
		select {
		case <-c:
			t.Fatal("more than one pending notification")
		default:
		}
	}
	expectNone := func(c <-chan struct{}) {
		t.Helper()
		select {
		case <-c:
			t.Fatal("unexpected notification")
		default:
		}
	}

	expectNone(ch)
	var ids []string
	for range 10 {
		ids = append(ids, e.submit(spec("true")).ID)
	}
	if len(ch) != 1 || cap(ch) != 1 {
		t.Fatalf("len %d cap %d: notifications must coalesce to one", len(ch), cap(ch))
	}
	expectOne(ch)
	expectOne(ch2)

	// Each kind of change notifies.
	changes := []struct {
		name string
		do   func()
	}{
		{"hold", func() { e.q.Hold(ids[0], "op", "") }},
		{"release", func() { e.q.Release(ids[0], "op", "") }},
		{"priority", func() { e.q.SetPriority(ids[0], 5, "op", "") }},
		{"kill", func() { e.q.Kill(ids[1], "op", "") }},
		{"pause", func() { e.q.SetPaused(true, "op", "") }},
		{"event", func() { e.q.AddEvent("pool", "cloud_error", "i", "create", "") }},
		{"transition", func() { e.mustTx(ids[2], func(tx *Tx, c *Container) error { return tx.Lock(c, "t") }) }},
		{"locked type", func() { e.pass(func(tx *Tx) { tx.SetLockedType(tx.Get(ids[2]), "t2") }) }},
	}
	for _, c := range changes {
		c.do()
		select {
		case <-ch:
		default:
			t.Fatalf("%s: no notification", c.name)
		}
	}
	expectOne(ch2) // many changes, one pending value

	// A pass that changes nothing does not notify.
	e.pass(func(tx *Tx) {
		tx.SetLockedType(tx.Get(ids[2]), "t2") // unchanged
		for _, c := range tx.Active() {
			_ = c.Priority
		}
	})
	expectNone(ch)

	stop()
	if _, ok := <-ch; ok {
		t.Fatal("channel not closed by unsubscribe")
	}
	stop() // a second call is harmless
	e.submit(spec("true"))
	expectOne(ch2)

	// Close closes the remaining subscriptions.
	e.close()
	if _, ok := <-ch2; ok {
		t.Fatal("Close left a subscription open")
	}
	stop2()
}

// Each lists active containers in scheduling order, then the final ones.
func TestEach(t *testing.T) {
	e := newEnv(t, nil)
	a := e.submit(spec("a")).ID
	b := e.submit(Spec{Command: []string{"b"}, Priority: intp(5)}).ID
	c := e.submit(spec("c")).ID
	e.toState(c, Complete)
	d := e.submit(spec("d")).ID
	e.toState(d, Cancelled)

	var got []string
	e.q.Each(func(c *Container) bool { got = append(got, c.ID); return true })
	if len(got) != 4 || !slices.Equal(got[:2], []string{b, a}) {
		t.Fatalf("Each order = %v, want %v then final ones", got, []string{b, a})
	}
	if !slices.Contains(got[2:], c) || !slices.Contains(got[2:], d) {
		t.Fatalf("Each final = %v", got[2:])
	}
	var n int
	e.q.Each(func(*Container) bool { n++; return false })
	if n != 1 {
		t.Fatalf("Each did not stop: %d calls", n)
	}
	n = 0
	e.q.Each(func(c *Container) bool { n++; return !c.State.Final() })
	if n != 3 {
		t.Fatalf("Each did not stop on a final container: %d calls", n)
	}
}

func TestErrorTexts(t *testing.T) {
	te := &TransitionError{ID: "c-1", From: Complete, To: Running}
	if got := te.Error(); got != "container c-1: illegal transition Complete -> Running" {
		t.Errorf("TransitionError = %q", got)
	}
	fe := &FieldError{Field: "priority", Msg: "must not be negative"}
	if got := fe.Error(); got != "priority: must not be negative" {
		t.Errorf("FieldError = %q", got)
	}
	if !errors.Is(ErrNotFound, ErrNotFound) {
		t.Error("ErrNotFound")
	}
}

// The store keeps only the newest EventRetention events; the rest are
// deleted as new ones are written, and the file holds no more after a
// reopen.
func TestEventRetention(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.Store.EventRetention = 10; o.EventsInMemory = 4 })
	for i := 0; i < 25; i++ {
		if err := e.q.AddEvent("test", "verb", "x", "act", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	evs := e.events()
	if len(evs) != 10 || evs[0].Reason != "15" || evs[9].Reason != "24" {
		t.Fatalf("kept %d events, %+v .. %+v; want reasons 15..24", len(evs), evs[0], evs[len(evs)-1])
	}
	e.reopen()
	if evs := e.events(); len(evs) != 10 || evs[0].Reason != "15" {
		t.Fatalf("after reopen: %d events from %q", len(evs), evs[0].Reason)
	}
	if err := e.q.AddEvent("test", "verb", "x", "act", "25"); err != nil {
		t.Fatal(err)
	}
	if evs := e.events(); len(evs) != 10 || evs[0].Reason != "16" || evs[9].Reason != "25" {
		t.Fatalf("after one more: %d events %q..%q", len(evs), evs[0].Reason, evs[len(evs)-1].Reason)
	}
}

// Only the KeepFinished containers that ended last are kept, in memory and
// in the file, with their stored output; active ones are never dropped.
func TestKeepFinished(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.KeepFinished = 3 })
	var ids []string
	for i := 0; i < 6; i++ {
		c := e.submit(spec("true"))
		ids = append(ids, c.ID)
	}
	active := e.submit(spec("sleep", "1")).ID
	for _, id := range ids {
		e.toState(id, Complete)
		if err := e.q.StoreLogsBatch([]string{id}, [][]byte{[]byte("out of " + id + "\n")}); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(time.Second)
	}
	if err := e.q.Flush(); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for i, id := range ids {
			_, ok := e.q.Get(id)
			_, logged, err := e.q.StoredLogs(id)
			if err != nil {
				t.Fatal(err)
			}
			if want := i >= 3; ok != want || logged != want {
				t.Errorf("%s: container %d (ended %d of 6) kept %v, output kept %v; want %v", when, i, i+1, ok, logged, want)
			}
		}
		if _, ok := e.q.Get(active); !ok {
			t.Errorf("%s: the active container was dropped", when)
		}
		if total, act := e.q.Len(); total != 4 || act != 1 {
			t.Errorf("%s: Len = %d, %d; want 4, 1", when, total, act)
		}
	}
	check("after the flush")
	e.reopen()
	check("after reopen")
	e.close()
	if got := e.held().ids; len(got) != 4 {
		t.Errorf("file holds %d containers, want 4: %v", len(got), got)
	}
}

// A submit's event is written in the submit's own commit (no flush needed),
// and submits alone keep the event log within its retention.
func TestSubmitEventsAreStoredWithTheContainers(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.Store.EventRetention = 5; o.EventsInMemory = 2 })
	var last string
	for i := 0; i < 8; i++ {
		last = e.submit(spec("true")).ID
	}
	var stored []Event
	for _, ev := range e.held().events {
		stored = append(stored, ev.event)
	}
	if len(stored) != 5 || stored[4].Action != "submit" || stored[4].Target != last {
		t.Fatalf("store holds %d events, last %+v; want 5 ending with the submit of %s", len(stored), stored[len(stored)-1], last)
	}
	for i := 1; i < len(stored); i++ {
		if stored[i].Seq != stored[i-1].Seq+1 {
			t.Fatalf("event sequence numbers %d then %d", stored[i-1].Seq, stored[i].Seq)
		}
	}
	e.reopen()
	if evs := e.events(); len(evs) != 5 || evs[4].Target != last {
		t.Fatalf("after reopen: %+v", evs)
	}
}

// SetLogsError changes the record in memory at once, is written with the
// next flush, and reports only real changes (so that callers count each
// failure once).
func TestSetLogsError(t *testing.T) {
	e := newEnv(t, nil)
	id := e.submit(spec("true")).ID
	e.toState(id, Complete)
	gen := e.q.Generation()
	const msg = "logs: not stored: no space left on device"
	if !e.q.SetLogsError(id, msg) || e.q.SetLogsError(id, msg) {
		t.Fatal("SetLogsError: want a change, then none")
	}
	if c, _ := e.q.Get(id); c.LogsError != msg || e.q.Generation() == gen {
		t.Fatalf("in memory: %q, gen %d (was %d)", c.LogsError, e.q.Generation(), gen)
	}
	if err := e.q.Flush(); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	if c, _ := e.q.Get(id); c.LogsError != msg {
		t.Fatalf("after reopen: %q", c.LogsError)
	}
	if !e.q.SetLogsError(id, "") {
		t.Fatal("clearing: no change")
	}
	if e.q.SetLogsError("c-0000000000000000", msg) {
		t.Fatal("an unknown container changed")
	}
}

// SetLogsTruncated changes the record in memory at once, is written with
// the next flush as a count of bytes (in whole KiB), and reports only real
// changes (so that the metric counts each cut output once).
func TestSetLogsTruncated(t *testing.T) {
	e := newEnv(t, nil)
	id := e.submit(spec("true")).ID
	e.toState(id, Complete)
	gen := e.q.Generation()
	const cut = 6 << 20
	if !e.q.SetLogsTruncated(id, cut) || e.q.SetLogsTruncated(id, cut) {
		t.Fatal("SetLogsTruncated: want a change, then none")
	}
	if c, _ := e.q.Get(id); c.LogsTruncated != cut || e.q.Generation() == gen {
		t.Fatalf("in memory: %d bytes, gen %d (was %d)", c.LogsTruncated, e.q.Generation(), gen)
	}
	if err := e.q.Flush(); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	c, _ := e.q.Get(id)
	if c.LogsTruncated != cut {
		t.Fatalf("after reopen: %d bytes", c.LogsTruncated)
	}
	j, err := json.Marshal(c)
	if err != nil || !bytes.Contains(j, []byte(`"logs_truncated":6291456,`)) {
		t.Fatalf("JSON %s, %v: want logs_truncated in bytes", j, err)
	}
	if !e.q.SetLogsTruncated(id, 0) {
		t.Fatal("clearing: no change")
	}
	if c, _ := e.q.Get(id); c.LogsTruncated != 0 {
		t.Fatalf("cleared: %d", c.LogsTruncated)
	}
	if e.q.SetLogsTruncated("c-0000000000000000", cut) {
		t.Fatal("an unknown container changed")
	}
	// A count that is not whole KiB rounds up: never 0 when some was cut.
	if got := TruncatedBytes(1); got.Bytes() != 1024 {
		t.Fatalf("TruncatedBytes(1) = %d bytes", got.Bytes())
	}
}

// A flush puts the pause flag only when it changed; whatever flushes come
// between, the store holds the flag last set, and a reopen finds it.
func TestPausedStoredOnChange(t *testing.T) {
	type step struct {
		do   string // "pause", "resume", "event" (a flush without a pause change), "pass", "reopen"
		want string // the stored flag after the step
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"never paused", []step{{"event", ""}, {"pass", ""}, {"reopen", ""}}},
		{"paused then flushes", []step{{"pause", "true"}, {"event", "true"}, {"pass", "true"}, {"reopen", "true"}, {"event", "true"}}},
		{"resumed then flushes", []step{{"pause", "true"}, {"reopen", "true"}, {"resume", "false"}, {"event", "false"}, {"reopen", "false"}, {"pause", "true"}}},
		{"set twice", []step{{"pause", "true"}, {"pause", "true"}, {"resume", "false"}, {"resume", "false"}, {"reopen", "false"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			id := e.submit(spec("true")).ID
			for i, s := range tc.steps {
				switch s.do {
				case "pause", "resume":
					if err := e.q.SetPaused(s.do == "pause", "operator:alice", ""); err != nil {
						t.Fatal(err)
					}
				case "event":
					if err := e.q.AddEvent("pool", "cloud_error", "i-1", "create", "quota"); err != nil {
						t.Fatal(err)
					}
				case "pass":
					// A record changed: the pass flushes.
					e.pass(func(tx *Tx) { toggleLock(t, tx, tx.Get(id)) })
				case "reopen":
					e.reopen()
				}
				if got := e.held().paused; got != (s.want == "true") {
					t.Fatalf("step %d (%s): stored flag %v, want %q", i, s.do, got, s.want)
				}
				if got := e.q.Paused(); got != (s.want == "true") {
					t.Fatalf("step %d (%s): Paused() = %v, want %v", i, s.do, got, s.want == "true")
				}
			}
		})
	}
}

// StoreLogsBatch keeps each known container's output whole (the caller
// cut it to max_output; the queue once kept only its last MiB), survives
// a reopen, and skips ids the queue no longer has.
func TestStoreLogsBatch(t *testing.T) {
	e := newEnv(t, nil)
	a, b := e.submit(spec("true")).ID, e.submit(spec("true")).ID
	big := append(bytes.Repeat([]byte("x"), 3<<20), "end\n"...)
	ids := []string{a, "gone", b}
	outs := [][]byte{[]byte("out of a\n"), []byte("never stored\n"), big}
	if err := e.q.StoreLogsBatch(ids, outs); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	for _, tc := range []struct {
		id    string
		found bool
		want  []byte
	}{
		{a, true, outs[0]},
		{"gone", false, nil},
		{b, true, big},
	} {
		got, found, err := e.q.StoredLogs(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if found != tc.found || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: found %v, %d bytes; want %v, %d bytes", tc.id, found, len(got), tc.found, len(tc.want))
		}
	}
	if err := e.q.StoreLogsBatch([]string{"gone"}, [][]byte{nil}); err != nil {
		t.Fatalf("a batch of unknown ids: %v", err)
	}
}
