package backend

import (
	"strings"
	"testing"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// TestContainersVerb: both backends apply a verb to many containers at
// once and name only the ones it failed on.
func TestContainersVerb(t *testing.T) {
	for _, name := range []string{"in-process", "remote"} {
		t.Run(name, func(t *testing.T) {
			var e *testEnv
			var b Backend
			if name == "remote" {
				e, b, _ = newRemoteEnv(t)
			} else {
				e = newTestEnv(t)
				b = NewInProcess(e.eng, "test")
			}
			a, c, done := e.submit("a", -1, 1), e.submit("b", -1, 1), e.submit("done", -1, 1)
			if _, err := e.eng.KillContainer(done, "test", ""); err != nil {
				t.Fatal(err)
			}
			ids := []string{a, c, done}
			failed, err := b.ContainersVerb(t.Context(), ids, view.ContainerPriority, 5, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(failed) != 1 || failed[done] == nil || !strings.Contains(failed[done].Error(), "finished container") {
				t.Errorf("failed = %v, want only %s (finished)", failed, done)
			}
			if failed, err = b.ContainersVerb(t.Context(), ids[:2], view.ContainerHold, 0, "why"); err != nil || failed != nil {
				t.Fatalf("hold: %v, %v", failed, err)
			}
			for _, id := range ids[:2] {
				if got := e.container(id); got.Priority != 5 || !got.Held || got.State != queue.Queued {
					t.Errorf("%s: priority %d held %v %s, want 5, held, Queued", id, got.Priority, got.Held, got.State)
				}
			}
		})
	}
}
