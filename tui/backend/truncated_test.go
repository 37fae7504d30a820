package backend

import (
	"bytes"
	"testing"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// The console's log viewer shows output cut to [containers] max_output as
// the API does: the note of what was dropped first.
func TestInProcessLogsSayWhatWasDropped(t *testing.T) {
	e := newTestEnv(t)
	defer e.close()
	id := e.Submit(view.Spec{Name: "loud", Command: fake.CmdOutput(0, 0, 5<<20), RuntimeConstraints: queue.Constraints{VCPUs: 1}})
	b := NewInProcess(e.eng, "x")
	var out []byte
	e.until("Complete with its output stored", 300, func() bool {
		var err error
		out, err = b.Logs(t.Context(), id, 0)
		return e.container(id).State == queue.Complete && err == nil
	})
	c := e.container(id)
	note := view.TruncationNote(c.LogsTruncated)
	if c.LogsTruncated == 0 || !bytes.HasPrefix(out, []byte(note)) || len(out)-len(note) > 4<<20 {
		t.Fatalf("logs_truncated %d; logs of %d bytes beginning %q", c.LogsTruncated, len(out), out[:min(len(out), 100)])
	}
}
