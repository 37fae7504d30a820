package worker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/statediagram"
)

// readStateDiagram parses states.txt as it is on disk.
func readStateDiagram(tb testing.TB) *statediagram.Diagram {
	tb.Helper()
	text, err := os.ReadFile("states.txt")
	if err != nil {
		tb.Fatal(err)
	}
	allowed, err := parseStateDiagram(string(text))
	if err != nil {
		tb.Fatal(err)
	}
	return allowed
}

// stateChange is one state change a pool made.
type stateChange struct {
	id       cloud.InstanceID
	from, to State
	why      string
}

// transitionRecorder watches the state changes of the pools of one test
// and reports, through fail, every change the diagram does not list.
type transitionRecorder struct {
	allowed *statediagram.Diagram
	fail    func(format string, args ...any)

	mu   sync.Mutex
	seen []stateChange
}

func newTransitionRecorder(tb testing.TB) *transitionRecorder {
	return &transitionRecorder{allowed: readStateDiagram(tb), fail: tb.Errorf}
}

// watch makes r see every state change p makes (call before p's first Step).
func (r *transitionRecorder) watch(p *Pool) {
	p.onTransition = r.record
}

func (r *transitionRecorder) record(id cloud.InstanceID, from, to State, why string) {
	r.mu.Lock()
	r.seen = append(r.seen, stateChange{id, from, to, why})
	r.mu.Unlock()
	if !r.allowed.Allows(string(from), string(to)) {
		r.fail("instance %s: state change %s --> %s (%s) is not in states.txt", id, stateName(from), stateName(to), why)
	}
}

// path returns the states id went through, from [*].
func (r *transitionRecorder) path(id cloud.InstanceID) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var p []string
	for _, c := range r.seen {
		if c.id == id {
			if len(p) == 0 {
				p = append(p, stateName(c.from))
			}
			p = append(p, stateName(c.to))
		}
	}
	return p
}

// TestStateDiagramDocumented: docs/design.md shows the instance state
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
	d := readStateDiagram(t)
	fromEntry := d.Reachable(string(entering))
	for _, s := range []State{StateUnknown, StateBooting, StateIdle, StateRunning, StateShutdown} {
		if !fromEntry[string(s)] {
			t.Errorf("%s cannot be reached from [*]", s)
		}
		if s != StateShutdown && !d.Reachable(string(s))[string(StateShutdown)] {
			t.Errorf("%s can never be shut down", s)
		}
	}
	if next := d.Next(string(StateShutdown)); len(next) > 0 {
		t.Errorf("shutdown is not final: --> %v", next)
	}
	// An instance this dispatcher did not create never counts as booting
	// except when its create call returns; nothing becomes booting again.
	for _, tr := range d.Transitions() {
		if tr.To == string(StateBooting) && tr.From != string(entering) && tr.From != string(StateUnknown) {
			t.Errorf("%s --> booting", tr.From)
		}
	}
}

// TestStatePaths follows instances through the state machine, as the
// recorder sees them.
func TestStatePaths(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	id := h.createIdle("small")
	if err := h.pool.StartContainer(id, spec("c1", "sleep", "10")); err != nil {
		t.Fatal(err)
	}
	h.until("c1 exited", time.Minute, func() bool { return h.state(id) == StateIdle })
	if _, err := h.pool.KillInstance(id, "test"); err != nil {
		t.Fatal(err)
	}
	want := []string{"[*]", "booting", "idle", "running", "idle", "shutdown"}
	if got := h.trans.path(id); !slices.Equal(got, want) {
		t.Errorf("created instance went through %v, want %v", got, want)
	}

	// Found by a listing with a container running on it.
	h = newHarness(t, hopt{drv: func(o *fake.Options) { o.BootDelay = 0 }})
	inst, err := h.drv.Create(context.Background(), cloud.InstanceType{Name: "small", ProviderType: "s1"},
		cloud.Tags{cloud.TagOwner: "test", cloud.TagInstanceType: "small"})
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := h.drv.Executor(inst)
	if _, _, err := ex.Execute(context.Background(), runner.Command{Verb: "start", ID: "c2"}.Line("/x"),
		[]byte(`{"id":"c2","command":["sleep","100000"]}`)); err != nil {
		t.Fatal(err)
	}
	h.until("listed instance running", time.Minute, func() bool { return h.state(inst.ID()) == StateRunning })
	want = []string{"[*]", "unknown", "running"}
	if got := h.trans.path(inst.ID()); !slices.Equal(got, want) {
		t.Errorf("listed instance went through %v, want %v", got, want)
	}
}

// TestUndeclaredTransitionReported: a state change missing from the
// diagram fails the recorder and is logged as an error by setState.
func TestUndeclaredTransitionReported(t *testing.T) {
	h := newHarness(t, hopt{})
	var logged logRecords
	h.pool.log = slog.New(&logged)
	var kept []string
	for _, l := range strings.Split(stateDiagram, "\n") {
		if !strings.HasPrefix(l, "idle --> running") {
			kept = append(kept, l)
		}
	}
	without, err := parseStateDiagram(strings.Join(kept, "\n"))
	if err != nil || without.Allows(string(StateIdle), string(StateRunning)) {
		t.Fatalf("diagram without idle --> running: %v", err)
	}
	h.pool.transitions = without
	var failures []string
	h.trans.fail = func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	h.trans.allowed = without

	h.step()
	id := h.createIdle("small")
	if err := h.pool.StartContainer(id, spec("c1", "sleep", "10")); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	if len(failures) != 1 || !strings.Contains(failures[0], "idle --> running") {
		t.Errorf("recorder failures: %q", failures)
	}
	if n := logged.count(slog.LevelError, "missing from states.txt"); n != 1 {
		t.Errorf("%d error logs about the undeclared change, want 1", n)
	}
}

// logRecords is a slog.Handler that keeps the records it is given.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r)
	l.mu.Unlock()
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

func (l *logRecords) count(level slog.Level, substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Level == level && strings.Contains(r.Message, substr) {
			n++
		}
	}
	return n
}
