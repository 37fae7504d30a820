//go:build linux

package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

// testMainEnv makes the test binary act as dispatch-tui: when it is set and
// the first argument is "runner", TestMain runs Main instead of the tests.
// That is how "start" can re-exec the binary as "runner supervise".
const testMainEnv = "DISPATCH_TUI_RUNNER_TEST_MAIN"

// The test binary also stands in for printf and env in the commands of
// containers (argvEcho, envEcho), so that tests of what reaches a command
// depend on no program of the machine's.
const (
	argvEcho = "argv-echo" // prints each further argument on a line
	envEcho  = "env-echo"  // prints its environment, one variable a line
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch {
		case os.Getenv(testMainEnv) == "1" && os.Args[1] == "runner":
			os.Exit(Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr, Env{Version: "0.1.0-test", Hash: "testhash"}))
		case os.Args[1] == argvEcho:
			for _, a := range os.Args[2:] {
				fmt.Println(a)
			}
			os.Exit(0)
		case os.Args[1] == envEcho:
			for _, kv := range os.Environ() {
				fmt.Println(kv)
			}
			os.Exit(0)
		}
	}
	os.Setenv(testMainEnv, "1")
	os.Exit(m.Run())
}

const waitFor = time.Minute

type harness struct {
	t   *testing.T
	env Env
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, env: Env{
		StateDir:  t.TempDir(),
		Version:   "0.1.0-test",
		Hash:      "abc123",
		Self:      self,
		SelfArgs:  []string{"runner"},
		KillGrace: 200 * time.Millisecond,
	}}
	t.Cleanup(h.cleanup)
	return h
}

// cleanup kills every container still running and waits until its
// supervisor recorded the exit, so no process outlives the test and the
// temporary directory can be removed.
func (h *harness) cleanup() {
	t := h.t
	deadline := time.Now().Add(waitFor)
	for {
		running := 0
		for _, st := range h.listQuiet() {
			if st.State != runner.StateRunning {
				continue
			}
			running++
			if st.PID > 0 {
				h.run("", "kill", st.ID, "--signal", "KILL")
			}
		}
		if running == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("cleanup: %d containers still running", running)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) run(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(args, strings.NewReader(stdin), &out, &errb, h.env)
	return code, out.String(), errb.String()
}

func (h *harness) start(spec runner.Spec) {
	h.t.Helper()
	body, err := json.Marshal(spec)
	if err != nil {
		h.t.Fatal(err)
	}
	code, out, errs := h.run(string(body), "start", spec.ID)
	if code != 0 || out != "" || errs != "" {
		h.t.Fatalf("start %s: code %d, stdout %q, stderr %q", spec.ID, code, out, errs)
	}
}

func (h *harness) listQuiet() []runner.Status {
	code, out, errs := h.run("", "list")
	if code != 0 {
		h.t.Errorf("list: code %d: %s", code, errs)
		return nil
	}
	sts, err := runner.ParseList([]byte(out))
	if err != nil {
		h.t.Errorf("list output: %v\n%s", err, out)
	}
	return sts
}

func (h *harness) status(id string) (runner.Status, bool) {
	for _, st := range h.listQuiet() {
		if st.ID == id {
			return st, true
		}
	}
	return runner.Status{}, false
}

// waitState polls list until id is in state.
func (h *harness) waitState(id, state string) runner.Status {
	h.t.Helper()
	var st runner.Status
	wait.Until(h.t, id+" "+state, waitFor, func() bool {
		var ok bool
		st, ok = h.status(id)
		return ok && st.State == state
	})
	return st
}

func (h *harness) logs(id string, args ...string) string {
	h.t.Helper()
	code, out, errs := h.run("", append([]string{"logs", id}, args...)...)
	if code != 0 {
		h.t.Fatalf("logs %s: code %d: %s", id, code, errs)
	}
	return out
}

func wantCode(t *testing.T, what string, code int, stderr string, want int, msg string) {
	t.Helper()
	if code != want {
		t.Fatalf("%s: code %d, want %d (stderr %q)", what, code, want, stderr)
	}
	if msg != "" && !strings.Contains(stderr, msg) {
		t.Fatalf("%s: stderr %q does not say %q", what, stderr, msg)
	}
	if want != 0 && (stderr == "" || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n")) {
		t.Fatalf("%s: want one line on stderr, got %q", what, stderr)
	}
}

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// procField returns field n (1-based, n >= 3) of /proc/<pid>/stat.
func procField(t *testing.T, pid, n int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return f[n-3]
}

func TestVersion(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	code, out, errs := h.run("", "version")
	wantCode(t, "version", code, errs, 0, "")
	if out != "0.1.0-test abc123\n" {
		t.Fatalf("version = %q", out)
	}

	h.env.Hash = ""
	_, out, _ = h.run("", "version")
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if want := "0.1.0-test " + hex.EncodeToString(sum[:]) + "\n"; out != want {
		t.Fatalf("version = %q, want %q", out, want)
	}
	if got, err := runner.ExecutableHash(); err != nil || got != hex.EncodeToString(sum[:]) {
		t.Fatalf("ExecutableHash = %q, %v", got, err)
	}
}

func TestStartExitCodeEnvAndLogs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(runner.Spec{ID: "c1", Command: []string{"sh", "-c", "echo \"$X\"; echo out2; echo err1 >&2; exit 3"}, Env: map[string]string{"X": "hello  world"}})
	st := h.waitState("c1", runner.StateExited)
	if st.ExitCode != 3 || st.PID <= 0 || st.StartedAt.IsZero() || st.FinishedAt.Before(st.StartedAt) {
		t.Fatalf("status = %+v", st)
	}
	if got := h.logs("c1"); got != "hello  world\nout2\nerr1\n" {
		t.Fatalf("logs = %q", got)
	}
	for tail, want := range map[string]string{"1": "err1\n", "2": "out2\nerr1\n", "3": "hello  world\nout2\nerr1\n", "9": "hello  world\nout2\nerr1\n", "0": "hello  world\nout2\nerr1\n"} {
		if got := h.logs("c1", "--tail", tail); got != want {
			t.Errorf("logs --tail %s = %q, want %q", tail, got, want)
		}
	}
	code, _, errs := h.run("", "logs", "nope")
	wantCode(t, "logs of an unknown id", code, errs, 1, "no such container")
}

func TestArgvAndEnvArriveLiterally(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	marks := t.TempDir()
	nasty := []string{
		"; rm -rf x",
		"; touch " + filepath.Join(marks, "semi"),
		"$(touch " + filepath.Join(marks, "dollar") + ")",
		"`touch " + filepath.Join(marks, "backtick") + "`",
		`it's "quoted" \ 'single' $HOME`,
		"line1\nline2\n",
		"| cat /etc/passwd > " + filepath.Join(marks, "pipe"),
		"",
		"  spaces  ",
		"*",
	}
	h.start(runner.Spec{ID: "argv", Command: append([]string{h.env.Self, argvEcho}, nasty...)})
	want := strings.Join(nasty, "\n") + "\n"

	env := map[string]string{
		"X":        "; rm -rf x $(touch " + filepath.Join(marks, "env") + ") 'q' \"d\"\nsecond line",
		"Y":        "`id` $PATH",
		"LC_EMPTY": "",
	}
	h.start(runner.Spec{ID: "env", Command: []string{h.env.Self, envEcho}, Env: env})

	if st := h.waitState("argv", runner.StateExited); st.ExitCode != 0 {
		t.Fatalf("argv echo exited %d: %s", st.ExitCode, h.logs("argv"))
	}
	if got := h.logs("argv"); got != want {
		t.Fatalf("argv echo output:\n%q\nwant\n%q", got, want)
	}
	if st := h.waitState("env", runner.StateExited); st.ExitCode != 0 {
		t.Fatalf("env echo exited %d", st.ExitCode)
	}
	out := h.logs("env")
	for k, v := range env {
		if !strings.Contains(out, k+"="+v+"\n") {
			t.Errorf("env output lacks %s=%q:\n%s", k, v, out)
		}
	}
	if !strings.Contains(out, "PATH="+basePATH+"\n") {
		t.Errorf("env output lacks the base PATH:\n%s", out)
	}
	if strings.Contains(out, testMainEnv) {
		t.Errorf("the runner's environment leaked into the command:\n%s", out)
	}
	if names := dirEntries(t, marks); len(names) != 0 {
		t.Fatalf("a shell ran: created %v", names)
	}
}

func TestKillTerm(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(runner.Spec{ID: "sleeper", Command: []string{"sleep", "60"}})
	// Main has returned; the container runs on.
	st := h.waitState("sleeper", runner.StateRunning)
	if st.PID <= 0 || !alive(st.PID, "") {
		t.Fatalf("status = %+v, pid not alive", st)
	}
	code, _, errs := h.run("", "kill", "sleeper")
	wantCode(t, "kill", code, errs, 0, "")
	if st := h.waitState("sleeper", runner.StateExited); st.ExitCode != 128+15 {
		t.Fatalf("exit code %d, want 143", st.ExitCode)
	}
	code, _, errs = h.run("", "kill", "sleeper", "--signal", "KILL")
	wantCode(t, "kill of an exited container", code, errs, 0, "")
	code, _, errs = h.run("", "kill", "ghost")
	wantCode(t, "kill of an unknown id", code, errs, 1, "no such container")
}

func TestKillIgnoringTerm(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// The shell notes each TERM and goes on; TERM to the group also ends
	// the sleep it waits for, so it starts another.
	h.start(runner.Spec{ID: "stubborn", Command: []string{"sh", "-c", `trap "echo got TERM" TERM; echo ready; while :; do sleep 60 & wait $!; done`}})
	wait.Until(t, "the trap to be set", waitFor, func() bool { return strings.Contains(h.logs("stubborn"), "ready") })
	code, _, errs := h.run("", "kill", "stubborn", "--signal", "TERM")
	wantCode(t, "kill TERM", code, errs, 0, "")
	wait.Until(t, "the TERM to arrive", waitFor, func() bool { return strings.Contains(h.logs("stubborn"), "got TERM") })
	if st, _ := h.status("stubborn"); st.State != runner.StateRunning {
		t.Fatalf("container ignoring TERM ended: %+v", st)
	}
	code, _, errs = h.run("", "kill", "stubborn", "--signal", "KILL")
	wantCode(t, "kill KILL", code, errs, 0, "")
	if st := h.waitState("stubborn", runner.StateExited); st.ExitCode != 128+9 {
		t.Fatalf("exit code %d, want 137", st.ExitCode)
	}
}

func TestKillReachesTheProcessGroup(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// The shell waits for a background child; TERM to the group ends both.
	h.start(runner.Spec{ID: "group", Command: []string{"sh", "-c", "sleep 60 & echo $!; wait"}})
	var bg int
	wait.Until(t, "the background pid", waitFor, func() bool {
		bg, _ = strconv.Atoi(strings.TrimSpace(h.logs("group")))
		return bg > 0
	})
	h.run("", "kill", "group")
	h.waitState("group", runner.StateExited)
	wait.Until(t, "the background child to end", waitFor, func() bool { return !alive(bg, "") })

	// What the command leaves running in its group ends with it.
	h.start(runner.Spec{ID: "leaver", Command: []string{"sh", "-c", "sleep 60 & echo $!; exit 0"}})
	if st := h.waitState("leaver", runner.StateExited); st.ExitCode != 0 {
		t.Fatalf("exit %d", st.ExitCode)
	}
	bg, _ = strconv.Atoi(strings.TrimSpace(h.logs("leaver")))
	if bg <= 0 {
		t.Fatalf("no background pid in %q", h.logs("leaver"))
	}
	wait.Until(t, "the leftover child to end", waitFor, func() bool { return !alive(bg, "") })
}

// TestOutlivesRunner runs "start" as a separate process, the way SSH does:
// it must return at once, with no descriptor left open by the container,
// and the container must run on in a session of its own.
func TestOutlivesRunner(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.env.Self, "runner", "start", "detached")
	cmd.Env = append(os.Environ(), StateDirEnv+"="+h.env.StateDir)
	cmd.Stdin = strings.NewReader(`{"id":"detached","command":["sleep","60"]}`)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second // fails the test if someone keeps the pipes open
	if err := cmd.Run(); err != nil {
		t.Fatalf("runner start: %v (stderr %q)", err, stderr.String())
	}
	if stdout.Len() != 0 || stderr.Len() != 0 {
		t.Fatalf("start printed %q / %q", stdout.String(), stderr.String())
	}
	st := h.waitState("detached", runner.StateRunning)
	if !alive(st.PID, "") {
		t.Fatalf("pid %d not alive", st.PID)
	}
	if sid := procField(t, st.PID, 6); sid != strconv.Itoa(st.PID) {
		t.Fatalf("container session %s, want its own (%d)", sid, st.PID)
	}
	if pgrp := procField(t, st.PID, 5); pgrp != strconv.Itoa(st.PID) {
		t.Fatalf("container process group %s, want its own (%d)", pgrp, st.PID)
	}
}

func TestSupervisorKilled(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(runner.Spec{ID: "orphan", Command: []string{"sleep", "60"}})
	st := h.waitState("orphan", runner.StateRunning)
	pr, err := readPIDRecord(filepath.Join(h.env.StateDir, "orphan"))
	spid, sstart := pr.spid, pr.sstart
	if err != nil || !alive(spid, sstart) {
		t.Fatalf("supervisor %d: %v", spid, err)
	}
	syscall.Kill(spid, syscall.SIGKILL)
	wait.Until(t, "the supervisor to die", waitFor, func() bool { return !alive(spid, sstart) })
	if st2, _ := h.status("orphan"); st2.State != runner.StateRunning || st2.PID != st.PID {
		t.Fatalf("after the supervisor died: %+v", st2)
	}
	h.run("", "kill", "orphan", "--signal", "KILL")
	if st := h.waitState("orphan", runner.StateExited); st.ExitCode != -1 || st.Lost != runner.LostKilled {
		t.Fatalf("exit code %d, lost %q; want -1 and %q (no supervisor to record it)", st.ExitCode, st.Lost, runner.LostKilled)
	}
}

// deafSpec is a container whose shell ignores SIGTERM once it has set its
// trap, so that only max_run_time's KILL ends it (137). The limit leaves
// the shell seconds to get there: a TERM before the trap ends it 143 (seen
// at 50 ms on a loaded machine).
func deafSpec(id string) runner.Spec {
	return runner.Spec{ID: id, Command: []string{"sh", "-c", `trap "" TERM; sleep 60`}, MaxRunTime: 2 * time.Second}
}

func TestMaxRunTime(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(runner.Spec{ID: "slow", Command: []string{"sleep", "60"}, MaxRunTime: 50 * time.Millisecond})
	h.start(deafSpec("deaf"))
	if st := h.waitState("slow", runner.StateExited); st.ExitCode != 143 {
		t.Fatalf("slow: exit %d, want 143", st.ExitCode)
	}
	if !strings.Contains(h.logs("slow"), "max_run_time") {
		t.Fatalf("logs do not say why: %q", h.logs("slow"))
	}
	if st := h.waitState("deaf", runner.StateExited); st.ExitCode != 137 {
		t.Fatalf("deaf: exit %d, want 137", st.ExitCode)
	}
}

func TestForget(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(runner.Spec{ID: "done", Command: []string{"true"}})
	h.start(runner.Spec{ID: "busy", Command: []string{"sleep", "60"}})
	h.waitState("done", runner.StateExited)
	h.waitState("busy", runner.StateRunning)

	code, _, errs := h.run("", "forget", "busy")
	wantCode(t, "forget running", code, errs, 1, "running")
	code, _, errs = h.run("", "forget", "done")
	wantCode(t, "forget", code, errs, 0, "")
	if _, ok := h.status("done"); ok {
		t.Fatal("forgotten container still listed")
	}
	if names := dirEntries(t, h.env.StateDir); !reflect.DeepEqual(names, []string{"busy", freeDir}) {
		t.Fatalf("state dir holds %v", names)
	}
	code, _, errs = h.run("", "forget", "done")
	wantCode(t, "forget again", code, errs, 1, "no such container")

	// Once forgotten, the id can be started again.
	h.start(runner.Spec{ID: "done", Command: []string{"sh", "-c", "exit 7"}})
	if st := h.waitState("done", runner.StateExited); st.ExitCode != 7 {
		t.Fatalf("restarted: exit %d", st.ExitCode)
	}
}

func TestInvalidIDs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// A sibling of the state dir that traversal would reach.
	victim := filepath.Join(filepath.Dir(h.env.StateDir), "x")
	ids := []string{"../x", "", strings.Repeat("a", 129), "..", ".", "a/b", "/etc", "a b", "x\n", "é"}
	for _, id := range ids {
		for _, verb := range [][]string{{"start", id}, {"kill", id}, {"kill", id, "--signal", "KILL"}, {"logs", id}, {"forget", id}} {
			spec, _ := json.Marshal(runner.Spec{ID: id, Command: []string{"true"}})
			code, out, errs := h.run(string(spec), verb...)
			wantCode(t, strings.Join(verb, " "), code, errs, 2, "")
			if out != "" {
				t.Fatalf("%q printed %q", verb, out)
			}
		}
	}
	if names := dirEntries(t, h.env.StateDir); len(names) != 0 {
		t.Fatalf("state dir holds %v", names)
	}
	if _, err := os.Lstat(victim); err == nil {
		t.Fatalf("%s was created", victim)
	}
	// 128 characters is fine.
	long := strings.Repeat("b", 128)
	h.start(runner.Spec{ID: long, Command: []string{"true"}})
	h.waitState(long, runner.StateExited)

	for _, args := range [][]string{nil, {"bogus"}, {"list", "c1", "extra"}, {"list", ".."}, {"kill", "c1", "--signal", "HUP"}, {"logs", "c1", "--tail", "-1"}, {"start"}, {"supervise"}} {
		code, _, errs := h.run("", args...)
		wantCode(t, strings.Join(args, " "), code, errs, 2, "")
	}
}

func TestDuplicateStart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(runner.Spec{ID: "dup", Command: []string{"sleep", "60"}})
	st := h.waitState("dup", runner.StateRunning)
	code, _, errs := h.run(`{"id":"dup","command":["true"]}`, "start", "dup")
	wantCode(t, "duplicate start", code, errs, 1, "container dup already exists")
	if st2 := h.waitState("dup", runner.StateRunning); st2.PID != st.PID {
		t.Fatalf("duplicate start changed the container: %+v", st2)
	}
}

func TestBadSpec(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cases := map[string]string{
		"empty":          ``,
		"truncated":      `{"id":"c1","command":["true"]`,
		"not an object":  `["true"]`,
		"unknown field":  `{"id":"c1","command":["true"],"shell":"rm -rf /"}`,
		"id mismatch":    `{"id":"c2","command":["true"]}`,
		"no command":     `{"id":"c1","command":[]}`,
		"empty argv0":    `{"id":"c1","command":[""]}`,
		"command string": `{"id":"c1","command":"true"}`,
		"trailing data":  `{"id":"c1","command":["true"]} {}`,
		"env with =":     `{"id":"c1","command":["true"],"env":{"A=B":"c"}}`,
		"env empty name": `{"id":"c1","command":["true"],"env":{"":"c"}}`,
		"NUL in argv":    `{"id":"c1","command":["true","a\u0000b"]}`,
		"NUL in env":     `{"id":"c1","command":["true"],"env":{"A":"a\u0000b"}}`,
		"option image":   `{"id":"c1","command":["true"],"image":"--privileged"}`,
		"spaced image":   `{"id":"c1","command":["true"],"image":"debian -v /:/h"}`,
		"negative time":  `{"id":"c1","command":["true"],"max_run_time":-1}`,
		"too large":      `{"id":"c1","command":["true"],"env":{"A":"` + strings.Repeat("a", 1<<20) + `"}}`,
	}
	for name, body := range cases {
		code, out, errs := h.run(body, "start", "c1")
		wantCode(t, name, code, errs, 2, "")
		if out != "" {
			t.Fatalf("%s: printed %q", name, out)
		}
	}
	if names := dirEntries(t, h.env.StateDir); len(names) != 0 {
		t.Fatalf("state dir holds %v", names)
	}
}

func TestStartFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for name, spec := range map[string]runner.Spec{
		"not in PATH":    {ID: "c1", Command: []string{"no-such-command-dispatch-tui"}},
		"PATH from spec": {ID: "c1", Command: []string{"sleep", "1"}, Env: map[string]string{"PATH": "/nonexistent"}},
		"absolute":       {ID: "c1", Command: []string{"/nonexistent/cmd"}},
		"not executable": {ID: "c1", Command: []string{"/etc/passwd"}},
	} {
		body, _ := json.Marshal(spec)
		code, _, errs := h.run(string(body), "start", "c1")
		wantCode(t, name, code, errs, 1, "cannot run")
		if names := dirEntries(t, h.env.StateDir); len(names) != 0 {
			t.Fatalf("%s: state dir holds %v", name, names)
		}
	}
}

// Not parallel: it changes PATH.
func TestImageWithoutDocker(t *testing.T) {
	h := newHarness(t)
	t.Setenv("PATH", t.TempDir())
	code, _, errs := h.run(`{"id":"img","command":["true"],"image":"debian:12"}`, "start", "img")
	wantCode(t, "start with an image", code, errs, 1, "image given but docker is not installed")
	if names := dirEntries(t, h.env.StateDir); len(names) != 0 {
		t.Fatalf("state dir holds %v", names)
	}
}

func TestCommandLine(t *testing.T) {
	spec := runner.Spec{ID: "c1", Command: []string{"echo", "$X; rm"}, Env: map[string]string{"X": "a b", "B": "--privileged"}, Image: "debian:12"}
	argv, env := commandLine(spec, "/usr/bin/docker", "/home/u")
	wantArgv := []string{"/usr/bin/docker", "run", "--rm", "--name=c1", "--env=B=--privileged", "--env=X=a b", "debian:12", "echo", "$X; rm"}
	if !reflect.DeepEqual(argv, wantArgv) {
		t.Fatalf("docker argv = %q, want %q", argv, wantArgv)
	}
	if want := []string{"HOME=/home/u", "PATH=" + basePATH}; !reflect.DeepEqual(env, want) {
		t.Fatalf("docker env = %q", env)
	}
	spec.Image = ""
	spec.Env["PATH"] = "/opt/bin"
	argv, env = commandLine(spec, "", "")
	if !reflect.DeepEqual(argv, spec.Command) {
		t.Fatalf("argv = %q", argv)
	}
	if want := []string{"B=--privileged", "PATH=/opt/bin", "X=a b"}; !reflect.DeepEqual(env, want) {
		t.Fatalf("env = %q, want %q", env, want)
	}
}

func TestListStates(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	root := h.env.StateDir
	if code, out, errs := h.run("", "list"); code != 0 || out != "" {
		t.Fatalf("empty list: %d %q %q", code, out, errs)
	}
	h.start(runner.Spec{ID: "b-run", Command: []string{"sleep", "60"}})
	h.start(runner.Spec{ID: "a-done", Command: []string{"sh", "-c", "exit 4"}})
	h.waitState("a-done", runner.StateExited)
	// Junk list must skip.
	os.WriteFile(filepath.Join(root, "junk"), []byte("x"), 0o600)
	os.Mkdir(filepath.Join(root, "bad id"), 0o700)
	os.Mkdir(filepath.Join(root, "forget~x~1"), 0o700)
	os.Symlink(filepath.Join(root, "a-done"), filepath.Join(root, "link"))
	// A directory whose start died before the supervisor ran (old enough
	// not to be a start in progress).
	os.Mkdir(filepath.Join(root, "c-lost"), 0o700)
	old := time.Now().Add(-time.Minute)
	os.Chtimes(filepath.Join(root, "c-lost"), old, old)
	// A start in progress: spec written, no pid yet.
	os.Mkdir(filepath.Join(root, "d-starting"), 0o700)
	os.WriteFile(filepath.Join(root, "d-starting", fileSpec), []byte(`{"id":"d-starting","command":["true"]}`), 0o600)

	sts := h.listQuiet()
	var ids []string
	got := map[string]runner.Status{}
	for _, st := range sts {
		ids = append(ids, st.ID)
		got[st.ID] = st
	}
	if want := []string{"a-done", "b-run", "c-lost", "d-starting"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	if st := got["a-done"]; st.State != runner.StateExited || st.ExitCode != 4 || st.FinishedAt.IsZero() {
		t.Errorf("a-done: %+v", st)
	}
	if st := got["b-run"]; st.State != runner.StateRunning || st.PID <= 0 || st.StartedAt.IsZero() || !st.FinishedAt.IsZero() {
		t.Errorf("b-run: %+v", st)
	}
	if st := got["c-lost"]; st.State != runner.StateExited || st.ExitCode != -1 || st.Lost != runner.LostUnknown {
		t.Errorf("c-lost: %+v", st)
	}
	if st := got["d-starting"]; st.State != runner.StateRunning || st.PID != 0 {
		t.Errorf("d-starting: %+v", st)
	}
	code, _, errs := h.run("", "kill", "d-starting")
	wantCode(t, "kill while starting", code, errs, 1, "still starting")
	code, _, errs = h.run("", "forget", "d-starting")
	wantCode(t, "forget while starting", code, errs, 1, "running")
	os.RemoveAll(filepath.Join(root, "d-starting"))
	code, _, errs = h.run("", "forget", "c-lost")
	wantCode(t, "forget lost", code, errs, 0, "")
}

func TestStateDirChecks(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	missing := filepath.Join(h.env.StateDir, "sub", "missing")
	env := h.env
	env.StateDir = missing
	var out, errb bytes.Buffer
	if code := Main([]string{"list"}, nil, &out, &errb, env); code != 0 || out.Len() != 0 {
		t.Fatalf("list of a missing state dir: %d %q", code, errb.String())
	}
	if code := Main([]string{"kill", "c1"}, nil, &out, &errb, env); code != 1 {
		t.Fatalf("kill in a missing state dir: %d", code)
	}

	open := t.TempDir()
	os.Chmod(open, 0o777)
	env.StateDir = open
	errb.Reset()
	code := Main([]string{"list"}, nil, &out, &errb, env)
	wantCode(t, "world-writable state dir", code, errb.String(), 1, "writable by group or others")

	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(h.env.StateDir, link)
	env.StateDir = link
	errb.Reset()
	code = Main([]string{"start", "c1"}, strings.NewReader(`{"id":"c1","command":["true"]}`), &out, &errb, env)
	wantCode(t, "symlinked state dir", code, errb.String(), 1, "not a directory")
}

func TestTailOffset(t *testing.T) {
	for _, c := range []struct {
		data string
		n    int
		want string
	}{
		{"", 3, ""},
		{"a\nb\nc\n", 1, "c\n"},
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc\n", 3, "a\nb\nc\n"},
		{"a\nb\nc\n", 4, "a\nb\nc\n"},
		{"a\nb\nc", 1, "c"},
		{"a\nb\nc", 2, "b\nc"},
		{"\n\n\n", 2, "\n\n"},
		{"\n", 1, "\n"},
		{"long line without newline", 1, "long line without newline"},
		{"x\n\ny\n", 2, "\ny\n"},
	} {
		for _, chunk := range []int{1, 2, 3, 7, 4096} {
			off, err := tailOffset(strings.NewReader(c.data), int64(len(c.data)), c.n, chunk)
			if err != nil || c.data[off:] != c.want {
				t.Errorf("tail %d of %q (chunk %d) = %q, %v; want %q", c.n, c.data, chunk, c.data[off:], err, c.want)
			}
		}
	}
}

func TestConcatReaderAt(t *testing.T) {
	dir := t.TempDir()
	var files []*os.File
	var sizes []int64
	for i, s := range []string{"hello\n", "", "wor", "ld\n"} {
		p := filepath.Join(dir, strconv.Itoa(i))
		os.WriteFile(p, []byte(s), 0o600)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
		sizes = append(sizes, int64(len(s)))
	}
	c := &concatReaderAt{parts: files, sizes: sizes}
	all := "hello\nworld\n"
	for off := 0; off <= len(all); off++ {
		for n := 0; off+n <= len(all); n++ {
			buf := make([]byte, n)
			if m, err := c.ReadAt(buf, int64(off)); m != n || err != nil || string(buf) != all[off:off+n] {
				t.Fatalf("ReadAt(%d, %d) = %d %v %q", off, n, m, err, buf)
			}
		}
	}
	if _, err := c.ReadAt(make([]byte, 3), int64(len(all)-1)); err == nil {
		t.Fatal("reading past the end: no error")
	}
}

// A list racing a start sees the container directory before its spec is
// written: that container is starting, not exited.
func TestListDuringStartIsNotExited(t *testing.T) {
	h := newHarness(t)
	dir := filepath.Join(h.env.StateDir, "racing")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir) // nothing to wait for in cleanup
	st, ok := h.status("racing")
	if !ok || st.State != runner.StateRunning {
		t.Fatalf("directory without spec listed as %+v (found %v), want running (starting)", st, ok)
	}
}
