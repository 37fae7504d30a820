//go:build unix

package agent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// KillAll must leave alone a finished container's pid and a pid whose
// start time does not match its record (reused by another process).
func TestKillAllSparesFinishedAndReusedPIDs(t *testing.T) {
	bystander := exec.Command("sleep", "60")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bystander.Process.Kill(); bystander.Wait() })
	pid := bystander.Process.Pid
	root := t.TempDir()
	write := func(id, name, body string) {
		dir := filepath.Join(root, id)
		os.MkdirAll(dir, 0o700)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Finished: an exit record exists.
	write("done", filePID, fmt.Sprintf("%d\n", pid))
	write("done", fileExit, fmt.Sprintf("1 2026-01-01T00:00:00Z - %d\n0 2026-01-01T00:00:01Z\n", pid))
	// Reused: the recorded start ticks are not the bystander's.
	write("reused", filePIDStart, fmt.Sprintf("1 2026-01-01T00:00:00Z 0 - %d\n", pid))
	write("reused", filePID, fmt.Sprintf("%d\n", pid))
	KillAll(root)
	time.Sleep(50 * time.Millisecond) // a SIGKILL would have landed by now
	if !alive(pid, "") {
		t.Fatal("KillAll killed a process that is not a running container of this runner")
	}
}
