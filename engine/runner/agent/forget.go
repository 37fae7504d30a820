// "runner forget": an ended container's directory removed, or kept for reuse.

//go:build unix

package agent

import (
	"fmt"
	"os"
	"path/filepath"

	"dispatch-tui/engine/runner"
)

func (a *agent) forget(id string) int {
	dir, code := a.containerDir("forget", id)
	if dir == "" {
		return code
	}
	st := a.status(dir, id)
	if st.State == runner.StateRunning {
		return a.fail(1, "runner forget %s: container is running; kill it first", id)
	}
	// Rename first, to a name list skips ('~' is not valid in an id), so the
	// container disappears at once even if removing its files fails.
	gone := filepath.Join(filepath.Dir(dir), fmt.Sprintf("forget~%s~%d", id, os.Getpid()))
	if err := os.Rename(dir, gone); err != nil {
		return a.fail(1, "runner forget %s: %v", id, err)
	}
	if recycle(filepath.Dir(dir), gone) == nil {
		return 0
	}
	if err := os.RemoveAll(gone); err != nil {
		return a.fail(1, "runner forget %s: removing %s: %v", id, gone, err)
	}
	return 0
}
