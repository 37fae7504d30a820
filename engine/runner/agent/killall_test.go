//go:build linux

package agent

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// KillAll kills a running container of this runner, and leaves alone a
// finished container's pid, a failed start's and a pid whose start time
// does not match its record (reused by another process).
func TestKillAllSparesFinishedAndReusedPIDs(t *testing.T) {
	sleeper := func() *exec.Cmd {
		c := exec.Command("sleep", "60")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	bystander, victim := sleeper(), sleeper()
	pid := bystander.Process.Pid
	root := t.TempDir()
	write := func(id, name string, body []byte) {
		dir := filepath.Join(root, id)
		os.MkdirAll(dir, 0o700)
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := pidRecord{pid: pid, start: procStart(pid), started: at}
	// Finished: pid_start holds the exit line.
	write("done", filePIDStart, append(formatPIDRecord(rec), formatExitLine(0, at, "")...))
	// A failed start: an exit file, no pid_start.
	write("failed", fileExit, append(formatPIDRecord(rec), formatExitLine(127, at, "")...))
	// Reused: the recorded start ticks are not the bystander's.
	reused := rec
	reused.start = "1"
	write("reused", filePIDStart, formatPIDRecord(reused))
	// Running: the victim, as recorded.
	vpid := victim.Process.Pid
	write("running", filePIDStart, formatPIDRecord(pidRecord{pid: vpid, start: procStart(vpid), started: at}))

	KillAll(root)
	// kill(2) marks its target for death before it returns: a SIGKILL
	// sent by KillAll is the signal a process reports dying of, whatever
	// is sent after it.
	bystander.Process.Signal(syscall.SIGTERM)
	victim.Process.Signal(syscall.SIGTERM)
	for _, c := range []struct {
		cmd  *exec.Cmd
		want syscall.Signal
		what string
	}{
		{bystander, syscall.SIGTERM, "a process that is not a running container of this runner"},
		{victim, syscall.SIGKILL, "a running container"},
	} {
		err := c.cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%s: wait: %v", c.what, err)
		}
		if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != c.want {
			t.Errorf("%s ended with %v, want the signal %v", c.what, ws, c.want)
		}
	}
}
