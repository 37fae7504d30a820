package agent

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/runner"
)

// epochFile reads the state dir's epoch file ("" when there is none).
func epochFile(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, fileEpoch))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// lockWaiters counts the requests blocked on the flock of path
// (/proc/locks marks them "->").
func lockWaiters(t *testing.T, path string) int {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ino := fi.Sys().(*syscall.Stat_t).Ino
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "->") && strings.Contains(line, fmt.Sprintf(":%d ", ino)) {
			n++
		}
	}
	return n
}

// TestEpochRaiseWaitsForCallsInFlight: a call holds the epoch lock while
// it runs, so a newer leader's first call waits for it before raising the
// epoch (the deposed leader's start is then in its listing); after the
// raise the older epoch is refused. The epoch is kept in the state dir.
func TestEpochRaiseWaitsForCallsInFlight(t *testing.T) {
	h := newHarness(t)
	code, _, stderr := h.run("", "list", "--epoch", "5")
	wantCode(t, "list at epoch 5", code, stderr, 0, "")
	if got := epochFile(t, h.env.StateDir); got != "5" {
		t.Fatalf("epoch file %q after a call at 5", got)
	}
	env := h.env
	env.fill()
	a := &agent{env: env, stdout: io.Discard, stderr: io.Discard}
	release, code, msg := a.admit("start", 5) // a call of epoch 5 in flight
	if code != 0 {
		t.Fatalf("admit at epoch 5: %d %s", code, msg)
	}
	done := make(chan int, 1)
	go func() {
		code, _, _ := h.run("", "list", "--epoch", "6")
		done <- code
	}()
	lock := filepath.Join(h.env.StateDir, fileEpochLock)
	wait.With{Seen: func() string { return "epoch file " + epochFile(t, h.env.StateDir) }}.
		Until(t, "the raise to 6 to wait on the lock", 10*time.Second, func() bool { return lockWaiters(t, lock) > 0 })
	select {
	case code := <-done:
		t.Fatalf("the call at epoch 6 ended (%d) while one at 5 was in flight", code)
	default:
	}
	if got := epochFile(t, h.env.StateDir); got != "5" {
		t.Fatalf("epoch file %q while a call at 5 is in flight", got)
	}
	release()
	if code := <-done; code != 0 {
		t.Fatalf("list at epoch 6: code %d", code)
	}
	if got := epochFile(t, h.env.StateDir); got != "6" {
		t.Fatalf("epoch file %q after the raise", got)
	}
	if _, code, msg := a.admit("start", 5); code != runner.CodeFenced || !strings.Contains(msg, "epoch 5 is lower than epoch 6") {
		t.Fatalf("admit at 5 after the raise: %d %q", code, msg)
	}
}

// TestEpochFileUnreadable: an epoch file that is not a number stops every
// fenced call with what to do, rather than letting any epoch through.
func TestEpochFileUnreadable(t *testing.T) {
	h := newHarness(t)
	if err := os.WriteFile(filepath.Join(h.env.StateDir, fileEpoch), []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := h.run("", "list", "--epoch", "2")
	wantCode(t, "list at epoch 2", code, stderr, 1, "not a number: remove it")
	code, _, stderr = h.run("", "list")
	wantCode(t, "list with no epoch", code, stderr, 0, "")
}
