//go:build linux

package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	if ex := *pr.exit; ex.code != 3 || ex.pid != st.PID || !ex.started.Equal(st.StartedAt) || !ex.finished.Equal(st.FinishedAt) {
		t.Fatalf("exit record %+v, status %+v", ex, st)
	}
	if st.PID <= 0 || st.StartedAt.IsZero() || st.FinishedAt.Before(st.StartedAt) {
		t.Fatalf("status %+v", st)
	}
}

// A start that failed leaves an exit file; a partly written one counts as
// not written.
func TestExitFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	started := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	finished := started.Add(time.Second)
	full := append(formatPIDRecord(pidRecord{started: started, spid: 7}), formatExitLine(127, finished, "")...)
	for _, tc := range []struct {
		content string
		ok      bool
	}{
		{string(full), true},
		{string(full[:len(full)-1]), false},
		{string(formatPIDRecord(pidRecord{started: started})), false},
		{"3\n", false},
		{"", false},
	} {
		if err := os.WriteFile(filepath.Join(dir, fileExit), []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		ex, ok := readExitRecord(dir)
		if ok != tc.ok || ok && (ex.code != 127 || ex.pid != 0 || !ex.started.Equal(started) || !ex.finished.Equal(finished)) {
			t.Errorf("exit file %q read as %+v, %v", tc.content, ex, ok)
		}
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
	// And this process's own line, as the kernel writes it: a live state
	// (R, S, or D while a thread waits on the disk of a busy machine).
	if state, start, err := procStat(os.Getpid()); err != nil || !strings.ContainsRune("RSD", rune(state)) || start == "" {
		t.Fatalf("procStat(self) = %q %q %v", state, start, err)
	}
}
