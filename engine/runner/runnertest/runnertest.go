// Package runnertest is the conformance suite of the runner protocol: one
// table of behaviours that every implementation must show, whether it is
// the agent on an instance (reached over SSH) or an in-memory stand-in
// that other tests run against. A test package provides a Target and
// calls Run.
package runnertest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

// Program is what a container's command does. Every program writes at
// least one line of output as soon as it is set up, so a container whose
// logs are not empty is ready (a program that ignores TERM has by then
// said so).
type Program struct {
	// Forever: the program runs until it is killed. Otherwise it exits
	// at once with Exit.
	Forever    bool
	Exit       int
	IgnoreTerm bool // with Forever: TERM does not end it, KILL does
	// Output: without Forever, the program first writes at least this
	// many bytes more, in lines.
	Output int
	// Unrunnable: a command that cannot be executed (no such file);
	// every other field is ignored.
	Unrunnable bool
}

// Target is one runner implementation, fresh for one test.
type Target struct {
	// Client speaks to the runner; its Executor runs the raw command
	// lines of the cases that send what Client would refuse to.
	Client *runner.Client
	// Command renders p as a command the runner's instance runs.
	Command func(p Program) []string
	// Lose makes the runner lose every container, running or not, as
	// when an instance reboots and its state directory is wiped.
	Lose func(t *testing.T)
	// Crash kills the supervisor of running container id, then its
	// command, so that nothing records the exit.
	Crash func(t *testing.T, id string)
	// Signal sends signal sig ("TERM" or "KILL") to the command of the
	// running container st from outside the runner, as a user's kill(1)
	// of the pid "runner list" shows.
	Signal func(t *testing.T, st runner.Status, sig string)
}

// Exit codes of a command ended by a signal.
const (
	exitTerm = 128 + 15
	exitKill = 128 + 9
)

// waitFor bounds every wait for a state: long, because it is only reached
// when something is wrong (the machine may be busy).
const waitFor = 15 * time.Second

// Run runs every case of the suite, each against a new Target.
func Run(t *testing.T, newTarget func(t *testing.T) Target) {
	for _, c := range slices.Concat(cases, healthCases, watchCases) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(&env{t: t, tg: newTarget(t), ctx: context.Background()})
		})
	}
}

// env is one case's view of its target.
type env struct {
	t   *testing.T
	tg  Target
	ctx context.Context
}

func (e *env) client() *runner.Client { return e.tg.Client }

// start starts a container running p and fails the test if it cannot.
func (e *env) start(id string, p Program) {
	e.t.Helper()
	if err := e.client().Start(e.ctx, runner.Spec{ID: id, Command: e.tg.Command(p)}); err != nil {
		e.t.Fatalf("start %s: %v", id, err)
	}
}

func (e *env) list() []runner.Status {
	e.t.Helper()
	sts, err := e.client().List(e.ctx)
	if err != nil {
		e.t.Fatalf("list: %v", err)
	}
	return sts
}

// status returns id's line of list.
func (e *env) status(id string) (runner.Status, bool) {
	e.t.Helper()
	for _, st := range e.list() {
		if st.ID == id {
			return st, true
		}
	}
	return runner.Status{}, false
}

// waitState polls list until id is in state, and returns its status.
func (e *env) waitState(id, state string) runner.Status {
	e.t.Helper()
	var st runner.Status
	wait.Until(e.t, id+" "+state, waitFor, func() bool {
		var ok bool
		st, ok = e.status(id)
		return ok && st.State == state
	})
	return st
}

// ready waits until a container's program is set up (see Program).
func (e *env) ready(id string) {
	e.t.Helper()
	wait.Until(e.t, id+" to be ready", waitFor, func() bool {
		out, err := e.client().Logs(e.ctx, id, 0, 0)
		return err == nil && len(out.Data) > 0
	})
}

// wantExit checks that err is a runner error with exit code code (0: no
// error) whose message says msg.
func (e *env) wantExit(what string, err error, code int, msg string) {
	e.t.Helper()
	if code == 0 {
		if err != nil {
			e.t.Fatalf("%s: %v", what, err)
		}
		return
	}
	var ee *runner.ExitError
	if !errors.As(err, &ee) {
		e.t.Fatalf("%s: got %v, want exit status %d", what, err, code)
	}
	if ee.Code != code || !strings.Contains(ee.Stderr, msg) {
		e.t.Fatalf("%s: exit status %d, stderr %q; want %d saying %q", what, ee.Code, ee.Stderr, code, msg)
	}
}

// raw runs one command line as Client would send it, with stdin.
func (e *env) raw(line string, stdin string) ([]byte, error) {
	out, stderr, err := e.client().Exec.Execute(e.ctx, e.client().Path+" runner "+line, []byte(stdin))
	var ee *runner.ExitError
	if errors.As(err, &ee) && ee.Stderr == "" {
		ee.Stderr = string(stderr)
	}
	return out, err
}

// batch sends reqs in one call and returns the replies' exit codes.
func (e *env) batch(reqs ...runner.Request) ([]int, []runner.Reply) {
	e.t.Helper()
	replies, err := e.client().Batch(e.ctx, reqs)
	if err != nil {
		e.t.Fatalf("batch: %v", err)
	}
	codes := make([]int, len(replies))
	for i, r := range replies {
		codes[i] = r.Code
	}
	return codes, replies
}

func (e *env) specJSON(id string, p Program) json.RawMessage {
	b, err := json.Marshal(runner.Spec{ID: id, Command: e.tg.Command(p)})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func ids(sts []runner.Status) []string {
	var out []string
	for _, st := range sts {
		out = append(out, st.ID)
	}
	return out
}

// wantCodes fails unless got equals want.
func (e *env) wantCodes(what string, got, want []int, replies []runner.Reply) {
	e.t.Helper()
	if !slices.Equal(got, want) {
		e.t.Fatalf("%s: reply codes %v, want %v (replies %+v)", what, got, want, replies)
	}
}
