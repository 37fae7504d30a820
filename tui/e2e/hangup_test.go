// Closing the terminal under `--demo` cleans up as q does.
package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/simulate"
)

// TestDemoHangupCleansUp: killing the tmux session (the terminal goes
// away: SIGHUP) while the demo runs containers leaves neither the demo's
// state dir nor any process started from it (its runners) behind.
func TestDemoHangupCleansUp(t *testing.T) {
	t.Parallel()
	needTmux(t)
	sb := newSandbox(t)
	t.Cleanup(func() {
		dirs, _ := filepath.Glob(filepath.Join(sb.tmp, "dispatch-tui-demo-*"))
		for _, d := range dirs {
			destroyInstances(t, simulate.DemoConfig(config.Default(), d))
		}
	})
	tm := startTerm(t, sb, 120, 40, nil, binary, "--demo")
	tm.waitScreen("a running instance in the header", 30*time.Second, func(sc string) bool {
		return strings.Contains(line(sc, 1), " running")
	})
	dirs, _ := filepath.Glob(filepath.Join(sb.tmp, "dispatch-tui-demo-*"))
	if len(dirs) != 1 {
		t.Fatalf("demo state dirs under TMPDIR: %v, want 1", dirs)
	}
	if n := processesUnder(dirs[0]); len(n) == 0 {
		t.Fatalf("no process runs from the demo's state dir %s while it shows a running instance", dirs[0])
	}
	if out, err := tm.tmux("kill-session", "-t", tm.name); err != nil {
		t.Fatalf("tmux kill-session: %v\n%s", err, out)
	}
	var left []string
	var statErr error
	seen := func() string {
		return fmt.Sprintf("state dir %s exists=%v, processes from it: %q", dirs[0], statErr == nil, left)
	}
	wait.With{Seen: seen}.Until(t, "the state dir and its processes gone after the terminal closed", 30*time.Second, func() bool {
		_, statErr = os.Stat(dirs[0])
		left = processesUnder(dirs[0])
		return os.IsNotExist(statErr) && len(left) == 0
	})
}

// processesUnder lists the command lines of the processes whose command
// line names a path under dir.
func processesUnder(dir string) []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue
		}
		cmd := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
		if strings.Contains(cmd, dir+"/") {
			found = append(found, cmd)
		}
	}
	return found
}
