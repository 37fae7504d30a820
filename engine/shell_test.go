package engine

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
)

// Shell refuses what has no shell: an unknown instance, and one whose
// driver's executor cannot open one (the fake driver's, in memory), saying so.
func TestShellRefused(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	id := h.submit(time.Hour, 0)
	var inst string
	h.until("running", 60, func() bool {
		c := h.container(id)
		inst = c.InstanceID
		return inst != "" && c.State == queue.Running
	})
	err := h.eng.Shell(context.Background(), "nosuch", "alice", "xterm", 80, 24, strings.NewReader(""), io.Discard)
	if !errors.Is(err, worker.ErrNotFound) {
		t.Errorf("shell on an unknown instance: %v", err)
	}
	err = h.eng.Shell(context.Background(), inst, "alice", "xterm", 80, 24, strings.NewReader(""), io.Discard)
	if !errors.Is(err, worker.ErrNoShell) || !strings.Contains(err.Error(), inst) {
		t.Errorf("shell on a fake driver's instance: %v", err)
	}
}
