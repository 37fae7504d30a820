//go:build linux

package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"dispatch-tui/engine/runner"
)

// mainExecutor runs command lines through Main in-process (the harness's
// env), as the SSH server would run the runner.
type mainExecutor struct{ h *harness }

func (e mainExecutor) Execute(ctx context.Context, line string, stdin []byte) ([]byte, []byte, error) {
	_, cmd, err := runner.ParseLine(line)
	if err != nil {
		return nil, nil, err
	}
	args := []string{cmd.Verb}
	if cmd.ID != "" {
		args = append(args, cmd.ID)
	}
	var out, errb bytes.Buffer
	if code := Main(args, bytes.NewReader(stdin), &out, &errb, e.h.env); code != 0 {
		return out.Bytes(), errb.Bytes(), &runner.ExitError{Code: code, Stderr: errb.String()}
	}
	return out.Bytes(), errb.Bytes(), nil
}

func (mainExecutor) Close() error { return nil }

func TestBatchStartsLogsAndForgets(t *testing.T) {
	h := newHarness(t)
	c := &runner.Client{Exec: mainExecutor{h}, Path: "/runner"}
	ctx := context.Background()
	specs := []runner.Spec{
		{ID: "b1", Command: []string{"sh", "-c", "echo one; exit 3"}},
		{ID: "b2", Command: []string{"/usr/bin/printf", "%s|", "$(x)", "a b"}, Env: map[string]string{"V": "`id`"}},
		{ID: "b3", Command: []string{"sleep", "30"}},
		{ID: "b4", Command: []string{"/nonexistent/command"}},
	}
	errs, err := c.StartMany(ctx, specs)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, true, true, false} {
		if (errs[i] == nil) != want {
			t.Fatalf("start %s: %v", specs[i].ID, errs[i])
		}
	}
	if errs, err := c.StartMany(ctx, specs[:1]); err != nil || errs[0] == nil || !strings.Contains(errs[0].Error(), "already exists") {
		t.Fatalf("duplicate start: %v %v", errs, err)
	}
	// Every started container has its own supervisor-recorded state.
	if st := h.waitState("b1", runner.StateExited); st.ExitCode != 3 {
		t.Fatalf("b1: %+v", st)
	}
	h.waitState("b2", runner.StateExited)
	if st := h.waitState("b3", runner.StateRunning); st.PID <= 0 {
		t.Fatalf("b3: %+v", st)
	}
	if _, ok := h.status("b4"); ok {
		t.Fatal("a failed start left its directory")
	}
	replies, err := c.Batch(ctx, []runner.Request{
		{Verb: "logs", ID: "b1"}, {Verb: "logs", ID: "b2", Tail: 10}, {Verb: "forget", ID: "b1"},
		{Verb: "forget", ID: "b3"}, {Verb: "kill", ID: "b3", Signal: runner.SignalKill}, {Verb: "start", ID: "../x"},
		{Verb: "logs", ID: ".."}, {Verb: "batch"}, {Verb: "list"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(replies[0].Stdout) != "one\n" || string(replies[1].Stdout) != "$(x)|a b|" {
		t.Fatalf("logs: %q %q", replies[0].Stdout, replies[1].Stdout)
	}
	if replies[2].Code != 0 || replies[3].Code == 0 || replies[4].Code != 0 {
		t.Fatalf("forget/kill replies: %+v", replies[2:5])
	}
	for i := 5; i < 8; i++ {
		if replies[i].Code != 2 {
			t.Fatalf("reply %d: %+v, want a usage error", i, replies[i])
		}
	}
	sts, err := runner.ParseList(replies[8].Stdout)
	if err != nil || len(sts) != 2 {
		t.Fatalf("list in batch: %v %+v", err, sts)
	}
	h.waitState("b3", runner.StateExited)
	// A malformed line gets its own error reply; the others still run.
	code, out, _ := h.run("{\"verb\":\"list\"}\nnot json\n", "batch")
	dec := json.NewDecoder(strings.NewReader(out))
	var r1, r2 runner.Reply
	if code != 0 || dec.Decode(&r1) != nil || dec.Decode(&r2) != nil || r1.Code != 0 || r2.Code != 2 {
		t.Fatalf("batch with a bad line: code %d, %q", code, out)
	}
}

func TestSplitShares(t *testing.T) {
	tests := []struct {
		n, cpus int
		want    [][2]int
	}{
		{0, 4, [][2]int{{0, 0}}},
		{1, 4, [][2]int{{0, 1}}},
		{2*minPerSupervisor - 1, 4, [][2]int{{0, 2*minPerSupervisor - 1}}},
		{2 * minPerSupervisor, 4, [][2]int{{0, minPerSupervisor}, {minPerSupervisor, 2 * minPerSupervisor}}},
		{256, 1, [][2]int{{0, 256}}},
		{256, 2, [][2]int{{0, 128}, {128, 256}}},
		{100, 3, [][2]int{{0, 33}, {33, 66}, {66, 100}}},
		{256, 64, [][2]int{{0, 32}, {32, 64}, {64, 96}, {96, 128}, {128, 160}, {160, 192}, {192, 224}, {224, 256}}},
	}
	for _, tc := range tests {
		got := splitShares(tc.n, tc.cpus)
		if !slices.Equal(got, tc.want) {
			t.Errorf("splitShares(%d, %d) = %v, want %v", tc.n, tc.cpus, got, tc.want)
		}
	}
}

// TestBatchStartManyUnderSeveralSupervisors: a batch big enough to be
// split starts every container, each with its own outcome, whichever
// supervisor started it.
func TestBatchStartManyUnderSeveralSupervisors(t *testing.T) {
	h := newHarness(t)
	c := &runner.Client{Exec: mainExecutor{h}, Path: "/runner"}
	n := 3 * minPerSupervisor
	specs := make([]runner.Spec, n)
	for i := range specs {
		specs[i] = runner.Spec{ID: fmt.Sprintf("m%03d", i), Command: []string{"sh", "-c", fmt.Sprintf("exit %d", i%7)}}
	}
	bad := n/2 + 1 // in a later share than the first
	specs[bad].Command = []string{"/nonexistent/command"}
	errs, err := c.StartMany(context.Background(), specs)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range specs {
		if (errs[i] != nil) != (i == bad) {
			t.Fatalf("start %s: %v", s.ID, errs[i])
		}
	}
	for i, s := range specs {
		if i == bad {
			if _, ok := h.status(s.ID); ok {
				t.Errorf("the failed start %s left its directory", s.ID)
			}
			continue
		}
		if st := h.waitState(s.ID, runner.StateExited); st.ExitCode != i%7 {
			t.Errorf("%s: exit %d, want %d", s.ID, st.ExitCode, i%7)
		}
	}
}
