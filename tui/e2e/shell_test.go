package e2e

import (
	"strings"
	"testing"

	"dispatch-tui/engine/enginetest/wait"
)

// TestShellOnInstance: `s` on an instance opens a shell there over the
// dispatcher's own SSH connection (the local driver's server, with a
// terminal); exiting it returns to the console, and the events view
// shows the shell with its actor.
func TestShellOnInstance(t *testing.T) {
	t.Parallel()
	needTmux(t)
	b := newBackendSetup(t)
	tm := startTerm(t, b.sb, 120, 40, nil, binary, "--config", b.cfg)
	tm.waitText("local (in-process)", screenWait)
	waitHealthy(t, b.server, screenWait)
	id := b.cli.submit("--name", "e2e-shell", "--", "sleep", "300")
	var inst string
	wait.Until(t, "e2e-shell Running", stateWait, func() bool {
		it := b.cli.ls("containers")[id]
		inst = it.InstanceID
		return it.State == "Running" && inst != ""
	})
	view(t, tm, 1)
	filterToID(t, tm, inst)
	tm.keys("s")
	tm.waitText("shell on "+inst, screenWait)
	tm.typeText("echo hi-$((40+2)); tty")
	tm.keys("Enter")
	sc := tm.waitScreen("the command's output", screenWait, func(sc string) bool {
		return strings.Contains(sc, "hi-42") && strings.Contains(sc, "/dev/pts/")
	})
	t.Logf("shell:\n%s", sc)
	tm.typeText("exit")
	tm.keys("Enter")
	tm.waitScreen("the console again", screenWait, func(sc string) bool {
		return strings.Contains(line(sc, 0), "dispatch-tui") && strings.Contains(sc, "shell on "+inst+" closed")
	})
	// The console reads the keys again, the first one included.
	view(t, tm, 4)
	tm.waitScreen("the shell's event with its actor", screenWait, func(sc string) bool {
		for _, l := range strings.Split(sc, "\n") {
			if strings.Contains(l, inst) && strings.Contains(l, " shell") && strings.Contains(l, "tui:") {
				return true
			}
		}
		return false
	})
	tm.quit()
}
