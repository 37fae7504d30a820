//go:build linux

package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

func startLine(t testing.TB, spec runner.Spec) string {
	b, err := json.Marshal(runner.Request{Verb: "start", ID: spec.ID, Spec: mustJSON(t, spec)})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mustStart starts specs in one frame of srv, each of which must start.
func mustStart(t *testing.T, srv *serveConn, specs ...runner.Spec) {
	t.Helper()
	reqs := make([]string, len(specs))
	for i, s := range specs {
		reqs[i] = startLine(t, s)
	}
	for i, r := range srv.exchange(reqs...) {
		if r.Code != 0 {
			t.Fatalf("start %s: %+v", specs[i].ID, r)
		}
	}
}

// supervisorOf is the pid of the supervisor that started id.
func (h *harness) supervisorOf(id string) (pid int, start string) {
	h.t.Helper()
	pr, err := readPIDRecord(filepath.Join(h.env.StateDir, id))
	if err != nil {
		h.t.Fatalf("%s: %v", id, err)
	}
	return pr.spid, pr.sstart
}

// TestServeKeepsSupervisors: the frames of one serve are started by the
// same supervisor, in a session of its own, and it looks after a container
// of a later frame as after the first: max_run_time (TERM, then KILL) and
// kill.
func TestServeKeepsSupervisors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := startServe(t, h.env)
	defer srv.end()
	mustStart(t, srv, runner.Spec{ID: "f1", Command: []string{"sleep", "60"}})
	first, _ := h.supervisorOf("f1")
	if first == os.Getpid() {
		t.Fatal("serve supervised the container itself")
	}
	if sid := procField(t, first, 6); sid != strconv.Itoa(first) {
		t.Fatalf("supervisor session %s, want its own (%d)", sid, first)
	}
	mustStart(t, srv, runner.Spec{ID: "f2", Command: []string{"sh", "-c", "exit 3"}})
	mustStart(t, srv,
		runner.Spec{ID: "slow", Command: []string{"sleep", "60"}, MaxRunTime: 50 * time.Millisecond},
		deafSpec("deaf"))
	mustStart(t, srv, runner.Spec{ID: "victim", Command: []string{"sleep", "60"}})
	for _, id := range []string{"f2", "slow", "deaf", "victim"} {
		if spid, _ := h.supervisorOf(id); spid != first {
			t.Errorf("%s started by supervisor %d, want %d (the first frame's)", id, spid, first)
		}
	}
	if st := h.waitState("f2", runner.StateExited); st.ExitCode != 3 {
		t.Errorf("f2: exit %d, want 3", st.ExitCode)
	}
	if st := h.waitState("slow", runner.StateExited); st.ExitCode != 143 || !strings.Contains(h.logs("slow"), "max_run_time") {
		t.Errorf("slow: exit %d, logs %q; want 143 and max_run_time", st.ExitCode, h.logs("slow"))
	}
	if st := h.waitState("deaf", runner.StateExited); st.ExitCode != 137 {
		t.Errorf("deaf: exit %d, want 137", st.ExitCode)
	}
	if rs := srv.exchange(`{"verb":"kill","id":"victim"}`); len(rs) != 1 || rs[0].Code != 0 {
		t.Fatalf("kill: %+v", rs)
	}
	if st := h.waitState("victim", runner.StateExited); st.ExitCode != 143 || st.Signal != "TERM" {
		t.Errorf("victim: exit %d signal %q, want 143 TERM", st.ExitCode, st.Signal)
	}
	if st, _ := h.status("f1"); st.State != runner.StateRunning {
		t.Errorf("f1: %+v, want running", st)
	}

	// A frame split in shares: share 0 goes to the same supervisor, the
	// others to one each.
	n := 2 * minPerSupervisor
	specs := make([]runner.Spec, n)
	for i := range specs {
		specs[i] = runner.Spec{ID: fmt.Sprintf("big%03d", i), Command: []string{"true"}}
	}
	mustStart(t, srv, specs...)
	spids := map[int]bool{}
	for _, s := range specs {
		spid, _ := h.supervisorOf(s.ID)
		spids[spid] = true
	}
	if want := len(splitShares(n, runtime.NumCPU())); len(spids) != want || !spids[first] {
		t.Errorf("the big frame's supervisors %v, want %d of them, %d among them", spids, want, first)
	}
	for _, s := range specs {
		h.waitState(s.ID, runner.StateExited)
	}
}

// TestServeSupervisorKilledBetweenFrames: the next frame starts its
// containers under a new supervisor; the killed one's container runs on,
// and lists as exited -1 once it is killed (no one recorded its exit).
func TestServeSupervisorKilledBetweenFrames(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := startServe(t, h.env)
	defer srv.end()
	mustStart(t, srv, runner.Spec{ID: "a", Command: []string{"sleep", "60"}})
	old, oldStart := h.supervisorOf("a")
	a := h.waitState("a", runner.StateRunning)
	syscall.Kill(old, syscall.SIGKILL)
	wait.Until(t, "the supervisor to die", waitFor, func() bool { return !alive(old, oldStart) })

	mustStart(t, srv, runner.Spec{ID: "b", Command: []string{"sleep", "60"}})
	if spid, _ := h.supervisorOf("b"); spid == old {
		t.Fatalf("b started by the killed supervisor %d", old)
	}
	mustStart(t, srv, runner.Spec{ID: "c", Command: []string{"true"}})
	bs, _ := h.supervisorOf("b")
	if cs, _ := h.supervisorOf("c"); cs != bs {
		t.Errorf("c started by %d, want %d (the new supervisor)", cs, bs)
	}
	if st, _ := h.status("a"); st.State != runner.StateRunning || st.PID != a.PID {
		t.Fatalf("a after its supervisor died: %+v", st)
	}
	h.run("", "kill", "a", "--signal", "KILL")
	if st := h.waitState("a", runner.StateExited); st.ExitCode != -1 {
		t.Errorf("a: exit %d, want -1 (no supervisor to record it)", st.ExitCode)
	}
	h.run("", "kill", "b", "--signal", "KILL")
	if st := h.waitState("b", runner.StateExited); st.ExitCode != 137 {
		t.Errorf("b: exit %d, want 137", st.ExitCode)
	}
}

// TestServeEndsSupervisorsAfterTheirContainers: when serve exits, its
// supervisors look after their containers until these end, then exit.
func TestServeEndsSupervisorsAfterTheirContainers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := startServeProcess(t, h.env)
	mustStart(t, srv, runner.Spec{ID: "long", Command: []string{"sleep", "60"}})
	spid, sstart := h.supervisorOf("long")
	srv.in.Close()
	if code := <-srv.done; code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	if !alive(spid, sstart) {
		t.Fatal("the supervisor exited with serve, before its container")
	}
	h.run("", "kill", "long")
	if st := h.waitState("long", runner.StateExited); st.ExitCode != 143 {
		t.Fatalf("long: exit %d, want 143 recorded by its supervisor", st.ExitCode)
	}
	wait.Until(t, "the supervisor to exit", waitFor, func() bool { return !alive(spid, sstart) })
}

// TestTwoServesAtOnce: two sessions start frames at the same time, each
// under supervisors of its own.
func TestTwoServesAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srvs := []*serveConn{startServeProcess(t, h.env), startServeProcess(t, h.env)}
	const frames, perFrame = 3, 4
	errs := make([]error, len(srvs))
	var wg sync.WaitGroup
	for k, srv := range srvs {
		wg.Go(func() {
			for f := range frames {
				reqs := make([]string, perFrame)
				for i := range reqs {
					id := fmt.Sprintf("s%d-f%d-%d", k, f, i)
					reqs[i] = startLine(t, runner.Spec{ID: id, Command: []string{"true"}})
				}
				rs, err := srv.tryExchange(reqs...)
				if err == nil && len(rs) != perFrame {
					err = fmt.Errorf("%d replies", len(rs))
				}
				for _, r := range rs {
					if err == nil && r.Code != 0 {
						err = fmt.Errorf("reply %+v", r)
					}
				}
				if err != nil {
					errs[k] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			t.Fatalf("serve %d: %v", k, err)
		}
	}
	spids := make([]int, len(srvs))
	for k := range srvs {
		for f := range frames {
			for i := range perFrame {
				id := fmt.Sprintf("s%d-f%d-%d", k, f, i)
				if st := h.waitState(id, runner.StateExited); st.ExitCode != 0 {
					t.Errorf("%s: exit %d", id, st.ExitCode)
				}
				spid, _ := h.supervisorOf(id)
				if spids[k] == 0 {
					spids[k] = spid
				}
				if spid != spids[k] {
					t.Errorf("%s: supervisor %d, want %d (its session's)", id, spid, spids[k])
				}
			}
		}
	}
	if spids[0] == spids[1] {
		t.Errorf("both sessions used supervisor %d", spids[0])
	}
}

// TestSupervisorFailures: a supervisor that dies or is stuck before it
// reports fails the starts it did not report, and their directories go.
// A supervisor here is a shell script in place of the runner.
func TestSupervisorFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, script, want string
		serve              bool
	}{
		{"dies, start", "exit 3", "the supervisor exited without starting the command (exit status 3)", false},
		{"dies, serve", "exit 3", "the supervisor exited without starting the command (exit status 3)", true},
		{"stuck, serve", "exec sleep 60", "the supervisor did not start the command within", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.env.Self, h.env.SelfArgs = "/bin/sh", []string{"-c", tc.script, "fake-runner"}
			spec := runner.Spec{ID: "x", Command: []string{"true"}}
			var code int
			var msg string
			if tc.serve {
				srv := startServe(t, h.env)
				rs := srv.exchange(startLine(t, spec))
				srv.end()
				code, msg = rs[0].Code, rs[0].Stderr
			} else {
				var stderr string
				code, _, stderr = h.run(string(mustJSON(t, spec)), "start", "x")
				msg = stderr
			}
			if code != 1 || !strings.Contains(msg, tc.want) {
				t.Fatalf("code %d, %q; want 1 and %q", code, msg, tc.want)
			}
			if _, ok := h.status("x"); ok {
				t.Error("the failed start left its directory")
			}
		})
	}
}

// TestIdleSupervisorDoesNotSpin: a kept supervisor whose containers all
// ended has no child, and its reaper waits for the next start instead of
// calling wait4 again and again.
func TestIdleSupervisorDoesNotSpin(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := startServe(t, h.env)
	defer srv.end()
	mustStart(t, srv, runner.Spec{ID: "done", Command: []string{"true"}})
	h.waitState("done", runner.StateExited)
	spid, _ := h.supervisorOf("done")
	ticks := func() int {
		u, _ := strconv.Atoi(procField(t, spid, 14))
		s, _ := strconv.Atoi(procField(t, spid, 15))
		return u + s
	}
	before := ticks()
	time.Sleep(300 * time.Millisecond) // the interval measured, not a wait for a state
	if used := ticks() - before; used > 5 {
		t.Fatalf("the idle supervisor used %d clock ticks in 300ms", used)
	}
	// And it still starts what comes next.
	mustStart(t, srv, runner.Spec{ID: "next", Command: []string{"true"}})
	if s, _ := h.supervisorOf("next"); s != spid {
		t.Fatalf("next started by %d, want %d", s, spid)
	}
	h.waitState("next", runner.StateExited)
}

// TestKeptSupervisorPassesTermOn: TERM sent to a kept supervisor reaches
// its commands, whose exits it records; it goes on serving.
func TestKeptSupervisorPassesTermOn(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	srv := startServe(t, h.env)
	defer srv.end()
	mustStart(t, srv, runner.Spec{ID: "t1", Command: []string{"sleep", "60"}})
	mustStart(t, srv, runner.Spec{ID: "t2", Command: []string{"sleep", "60"}})
	spid, _ := h.supervisorOf("t1")
	h.waitState("t2", runner.StateRunning)
	syscall.Kill(spid, syscall.SIGTERM)
	for _, id := range []string{"t1", "t2"} {
		if st := h.waitState(id, runner.StateExited); st.ExitCode != 143 || st.Signal != "TERM" {
			t.Errorf("%s: exit %d signal %q, want 143 TERM", id, st.ExitCode, st.Signal)
		}
	}
	mustStart(t, srv, runner.Spec{ID: "t3", Command: []string{"true"}})
	if s, _ := h.supervisorOf("t3"); s != spid {
		t.Errorf("t3 started by %d, want %d", s, spid)
	}
	h.waitState("t3", runner.StateExited)
}
