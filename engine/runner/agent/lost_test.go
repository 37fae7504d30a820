//go:build linux

package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

// A supervisor killed with its command (SIGKILL to both, as a host going
// down does) leaves no exit: list reports the container lost, with why,
// not as a program that exited -1. A program's own exit code, even 255
// (what exit(-1) gives), is an exit and not lost.
func TestSupervisorGoneWithItsCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(runner.Spec{ID: "victim", Command: []string{"sleep", "60"}})
	h.start(runner.Spec{ID: "self", Command: []string{"sh", "-c", "exit 255"}})
	st := h.waitState("victim", runner.StateRunning)
	spid, pid := pidStartPIDs(t, filepath.Join(h.env.StateDir, "victim"))
	if pid != st.PID {
		t.Fatalf("pid_start names pid %d, list %d", pid, st.PID)
	}
	if err := syscall.Kill(spid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got := h.waitState("victim", runner.StateExited)
	if got.Lost != runner.LostKilled || got.ExitCode != -1 || !got.FinishedAt.IsZero() || got.Signal != "" {
		t.Fatalf("after SIGKILL of the supervisor and its command: %+v; want exited -1, lost %q", got, runner.LostKilled)
	}
	if self := h.waitState("self", runner.StateExited); self.Lost != "" || self.ExitCode != 255 || self.FinishedAt.IsZero() {
		t.Fatalf("a program exiting -1 by itself: %+v; want exit 255 recorded, not lost", self)
	}
}

// After a reboot the pids in pid_start name whatever process has them in
// the new boot: a container whose record holds another boot id is lost,
// "host rebooted", even while a process with its pid and start time runs,
// and kill leaves that process alone.
func TestRebootedHostLosesItsContainers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// It answers USR1 with a line of output: proof that it lives, and
	// that no SIGKILL was sent before that USR1 (it would be dead).
	h.start(runner.Spec{ID: "before", Command: []string{"sh", "-c", `trap "echo pong" USR1; echo ready; while :; do sleep 0.05; done`}})
	st := h.waitState("before", runner.StateRunning)
	dir := filepath.Join(h.env.StateDir, "before")
	spid, pid := pidStartPIDs(t, dir)
	// Stands in for the process that got the pid in the new boot.
	stranger := pid
	t.Cleanup(func() {
		syscall.Kill(-stranger, syscall.SIGKILL)
		// The supervisor records that end and exits; the directory can
		// go after.
		wait.Until(t, "the supervisor gone", waitFor, func() bool { return !alive(spid, "") })
	})
	setBootID(t, dir, "00000000-0000-4000-8000-000000000000")

	got, ok := h.status("before")
	if !ok || got.State != runner.StateExited || got.Lost != runner.LostRebooted || got.ExitCode != -1 || got.PID != st.PID {
		t.Fatalf("a record of an earlier boot: %+v; want exited -1, lost %q", got, runner.LostRebooted)
	}
	wait.Until(t, "the command set up", waitFor, func() bool { return strings.Contains(readOut(dir), "ready") })
	code, _, errs := h.run("", "kill", "before", "--signal", "KILL")
	wantCode(t, "kill of a container of an earlier boot", code, errs, 0, "")
	KillAll(h.env.StateDir)
	if err := syscall.Kill(stranger, syscall.SIGUSR1); err != nil {
		t.Fatalf("pid %d, which an earlier boot's record names, is gone after kill and KillAll: %v", stranger, err)
	}
	seen := func() string { return fmt.Sprintf("output %q", readOut(dir)) }
	wait.With{Seen: seen}.Until(t, fmt.Sprintf("pid %d, which an earlier boot's record names, to answer USR1 after kill and KillAll (not killed)", stranger), waitFor, func() bool {
		return strings.Contains(readOut(dir), "pong")
	})
}

// readOut is the stdout of the container in dir so far.
func readOut(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, fileStdout))
	return string(b)
}

// The boot id rides in pid_start after the five fields and "h", so a
// runner that reads only "h" still finds it sixth; a record without a
// boot id (an older supervisor's) cannot tell a reboot from a kill.
func TestPIDRecordBootID(t *testing.T) {
	t.Parallel()
	if bootID() == "" {
		t.Fatalf("no boot id in %s", bootIDPath)
	}
	rec := pidRecord{pid: 42, start: "7", spid: 41, sstart: "6", health: true, boot: bootID()}
	line := string(formatPIDRecord(rec))
	if f := strings.Fields(line); len(f) != 7 || f[5] != "h" || f[6] != bootPrefix+bootID() {
		t.Fatalf("pid_start line %q", line)
	}
	back, ok := parsePIDLine(strings.TrimSuffix(line, "\n"))
	if !ok || back.boot != rec.boot || !back.health || back.pid != 42 {
		t.Fatalf("parsed %q as %+v", line, back)
	}
	for _, tc := range []struct {
		boot, want string
	}{
		{bootID(), runner.LostKilled},
		{"another-boot", runner.LostRebooted},
		{"", runner.LostUnknown},
	} {
		r := pidRecord{boot: tc.boot}
		if got := r.lostReason(); got != tc.want {
			t.Errorf("boot %q: lost %q, want %q", tc.boot, got, tc.want)
		}
		if got, want := r.rebooted(), tc.want == runner.LostRebooted; got != want {
			t.Errorf("boot %q: rebooted %v", tc.boot, got)
		}
	}
	for in, want := range map[string]string{"abc\n": "abc", "": "", "a b\n": "", strings.Repeat("x", 65): ""} {
		if got := parseBootID([]byte(in)); got != want {
			t.Errorf("parseBootID(%q) = %q, want %q", in, got, want)
		}
	}
}

// pidStartPIDs returns the supervisor's pid and the command's from the
// pid_start of the container in dir: "<start> <started> <spid> <sstart>
// <pid> ...".
func pidStartPIDs(t *testing.T, dir string) (spid, pid int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filePIDStart))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	if len(f) < 5 {
		t.Fatalf("pid_start %q", b)
	}
	spid, err1 := strconv.Atoi(f[2])
	pid, err2 := strconv.Atoi(f[4])
	if err1 != nil || err2 != nil || spid <= 1 || pid <= 1 {
		t.Fatalf("pid_start %q", b)
	}
	return spid, pid
}

// setBootID rewrites the boot id field of the pid_start in dir (a running
// container's: one line) to id, as if its supervisor had run in the boot
// with that id.
func setBootID(t *testing.T, dir, id string) {
	t.Helper()
	path := filepath.Join(dir, filePIDStart)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f []string
	for _, w := range strings.Fields(string(b)) {
		if !strings.HasPrefix(w, "boot=") {
			f = append(f, w)
		}
	}
	if strings.Count(string(b), "\n") != 1 || len(f) < 5 {
		t.Fatalf("pid_start %q: not a running container's", b)
	}
	if err := os.WriteFile(path, []byte(strings.Join(append(f, "boot="+id), " ")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}
