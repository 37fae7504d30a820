//go:build linux

package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dispatch-tui/engine/runner"
)

// A command that cannot start leaves its reason in the container's stderr
// as well as in the start's reply: when that reply is lost (the start cut
// short after the supervisor gave up), "list" shows the container exited
// 127 or 126, and its logs must say why.
func TestCommandThatCannotStartSaysWhyInItsStderr(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	a := &agent{env: h.env}
	a.env.fill()
	for _, tc := range []struct {
		id   string
		cmd  []string
		code int
		why  string
	}{
		{"absolute", []string{"/nonexistent/cmd"}, 127, "no such file or directory"},
		{"not-in-path", []string{"no-such-command-dispatch-tui"}, 127, "not found in PATH"},
		{"not-executable", []string{"/etc/passwd"}, 126, "permission denied"},
	} {
		// As "start" does, up to the supervisor's report, which is lost.
		dir := filepath.Join(h.env.StateDir, tc.id)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		spec := runner.Spec{ID: tc.id, Command: tc.cmd}
		if _, err := a.superviseStart(dir, pidRecord{spid: os.Getpid(), sstart: procStart(os.Getpid())}, spec, nil, devnull); err == nil {
			t.Fatalf("%s: started", tc.id)
		}
		st := h.waitState(tc.id, runner.StateExited)
		logs := h.logs(tc.id)
		if st.ExitCode != tc.code || !strings.HasPrefix(logs, stderrPrefix+"cannot run ") || !strings.Contains(logs, tc.why) {
			t.Errorf("%s: exit %d, logs %q; want exit %d and logs saying %q", tc.id, st.ExitCode, logs, tc.code, tc.why)
		}
	}
}
