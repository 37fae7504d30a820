//go:build unix

package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/runner"
)

// A new container's directory holds few files, and an exited one says
// everything list reports in pid_start.
func TestStateFiles(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(runner.Spec{ID: "few", Command: []string{"sh", "-c", "exit 3"}})
	st := h.waitState("few", runner.StateExited)
	dir := filepath.Join(h.env.StateDir, "few")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{filePIDStart, fileStderr, fileStdout}; !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	pr, err := readPIDRecord(dir)
	if err != nil || pr.exit == nil {
		t.Fatalf("pid record %+v, %v", pr, err)
	}
	if ex := *pr.exit; !ex.full || ex.code != 3 || ex.pid != st.PID || !ex.started.Equal(st.StartedAt) || !ex.finished.Equal(st.FinishedAt) {
		t.Fatalf("exit record %+v, status %+v", ex, st)
	}
	if st.PID <= 0 || st.StartedAt.IsZero() || st.FinishedAt.Before(st.StartedAt) {
		t.Fatalf("status %+v", st)
	}
	// Earlier runners renamed pid_start to exit, next to a pid file.
	if err := os.Rename(filepath.Join(dir, filePIDStart), filepath.Join(dir, fileExit)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, filePID), []byte(strconv.Itoa(st.PID)+"\n"), 0o600)
	if st2, _ := h.status("few"); st2 != st {
		t.Fatalf("from the exit file: %+v, want %+v", st2, st)
	}
	// Partly written files count as not written.
	os.WriteFile(filepath.Join(dir, fileExit), []byte("3 2026"), 0o600)
	if _, ok := readExitRecord(dir); ok {
		t.Fatal("unterminated exit file read")
	}
}

// Directories written by earlier runners (one value per file) are still
// read: a restarted dispatcher re-adopts their containers.
func TestOldStateDirs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	root := h.env.StateDir
	write := func(id string, files map[string]string) string {
		dir := filepath.Join(root, id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, s := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	started := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	finished := started.Add(time.Minute)
	write("old-done", map[string]string{
		fileSpec: `{"id":"old-done","command":["true"]}`, fileSupervisor: "1 1\n", fileStdout: "", fileStderr: "",
		fileStartedAt: started.Format(time.RFC3339Nano) + "\n", filePIDStart: "1\n", filePID: "4242\n",
		fileFinishedAt: finished.Format(time.RFC3339Nano) + "\n", fileExit: "3\n",
	})
	if st, _ := h.status("old-done"); st.State != runner.StateExited || st.ExitCode != 3 || st.PID != 4242 || !st.StartedAt.Equal(started) || !st.FinishedAt.Equal(finished) {
		t.Fatalf("old-done: %+v", st)
	}

	// The layout before this one: pid_start renamed to exit at the end,
	// next to a pid file. The pid may have been reused since (here: this
	// process); the exit file decides.
	self := os.Getpid()
	write("old-renamed", map[string]string{
		fileStdout: "", fileStderr: "", filePID: strconv.Itoa(self) + "\n",
		fileExit: string(formatPIDRecord(pidRecord{pid: self, start: "1", started: started, spid: 999999999})) + string(formatExitLine(5, finished)),
	})
	if st, _ := h.status("old-renamed"); st.State != runner.StateExited || st.ExitCode != 5 || st.PID != self || !st.StartedAt.Equal(started) || !st.FinishedAt.Equal(finished) {
		t.Fatalf("old-renamed: %+v", st)
	}

	sleeper := exec.Command("sleep", "60")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { sleeper.Wait(); close(waited) }()
	t.Cleanup(func() { sleeper.Process.Kill(); <-waited })
	pid := sleeper.Process.Pid
	write("old-run", map[string]string{
		fileSpec: `{"id":"old-run","command":["sleep","60"]}`, fileSupervisor: "999999999 1\n", fileStdout: "", fileStderr: "",
		fileStartedAt: started.Format(time.RFC3339Nano) + "\n", filePIDStart: procStart(pid) + "\n", filePID: strconv.Itoa(pid) + "\n",
	})
	if st, _ := h.status("old-run"); st.State != runner.StateRunning || st.PID != pid || !st.StartedAt.Equal(started) {
		t.Fatalf("old-run: %+v", st)
	}
	h.run("", "kill", "old-run", "--signal", "KILL")
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("old-run not killed")
	}
	if st, _ := h.status("old-run"); st.State != runner.StateExited || st.ExitCode != -1 {
		t.Fatalf("old-run after kill: %+v", st)
	}
	if code, _, errs := h.run("", "forget", "old-done"); code != 0 {
		t.Fatalf("forget old-done: %d %s", code, errs)
	}
}

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	tail := " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 20 21 22\n"
	for _, tc := range []struct {
		line  string
		state byte
		start string
		ok    bool
	}{
		{"42 (true) R" + tail, 'R', "987654", true},
		{"42 (a) b (c)) S" + tail, 'S', "987654", true},
		{"42 (x y  z) Z" + tail, 'Z', "987654", true},
		{"42 (true) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 555\n", 'R', "555", true},
		{"42 (true) R 1 2 3\n", 0, "", false},
		{"42 true R" + tail, 0, "", false},
		{"", 0, "", false},
	} {
		state, start, ok := parseProcStat([]byte(tc.line))
		if state != tc.state || start != tc.start || ok != tc.ok {
			t.Errorf("parseProcStat(%q) = %q %q %v, want %q %q %v", tc.line, state, start, ok, tc.state, tc.start, tc.ok)
		}
	}
	// And this process's own line, as the kernel writes it.
	if state, start, err := procStat(os.Getpid()); err != nil || state != 'R' && state != 'S' || start == "" {
		t.Fatalf("procStat(self) = %q %q %v", state, start, err)
	}
}
