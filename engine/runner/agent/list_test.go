//go:build unix

package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"dispatch-tui/engine/runner"
)

// TestStatusAtRoot: a container read relative to the state root's
// descriptor, as list reads it, has the status read through its absolute
// path, as kill and forget read it, in every state list tells apart.
func TestStatusAtRoot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(id, name string, body []byte) {
		dir := filepath.Join(root, id)
		os.MkdirAll(dir, 0o700)
		if name == "" {
			return
		}
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	self := os.Getpid()
	at := time.Date(2026, 1, 1, 0, 0, 0, 5, time.UTC)
	rec := pidRecord{pid: self, start: procStart(self), started: at}
	write("done", filePIDStart, append(formatPIDRecord(rec), formatExitLine(3, at, "TERM")...))
	write("failed", fileExit, append(formatPIDRecord(rec), formatExitLine(127, at, "")...))
	write("running", filePIDStart, formatPIDRecord(rec))
	dead := rec
	dead.start = "1" // not this process's start: it is gone
	write("dead", filePIDStart, formatPIDRecord(dead))
	checked := rec
	checked.health = true
	write("checked", filePIDStart, formatPIDRecord(checked))
	health, _ := json.Marshal(healthRecord{Health: runner.Health{State: runner.HealthHealthy, LastCheck: at}})
	write("checked", fileHealth, append(health, '\n'))
	write("unwritten", filePIDStart, nil)
	write("starting", fileSpec, []byte("{}\n"))
	write("lost", "", nil)
	old := time.Now().Add(-time.Minute)
	os.Chtimes(filepath.Join(root, "lost"), old, old)

	want := map[string]string{
		"done": runner.StateExited, "failed": runner.StateExited, "running": runner.StateRunning,
		"dead": runner.StateExited, "checked": runner.StateRunning, "unwritten": runner.StateRunning,
		"starting": runner.StateRunning, "lost": runner.StateExited,
	}
	a := &agent{env: Env{StateDir: root, Now: time.Now}}
	f, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for id, state := range want {
		byRoot := a.statusAt(ctrDir{fd: int(f.Fd()), name: id}, id)
		byPath := a.status(filepath.Join(root, id), id)
		if !reflect.DeepEqual(byRoot, byPath) {
			t.Errorf("%s: by the root's descriptor %+v, by path %+v", id, byRoot, byPath)
		}
		if byRoot.State != state || byRoot.StartedAt.IsZero() {
			t.Errorf("%s: %+v, want state %s and a start time", id, byRoot, state)
		}
	}
	if st := a.statusAt(ctrDir{fd: int(f.Fd()), name: "checked"}, "checked"); st.Health == nil || st.Health.State != runner.HealthHealthy {
		t.Errorf("checked: health %+v", st.Health)
	}
}
