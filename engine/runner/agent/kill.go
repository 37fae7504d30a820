// "runner kill", and killing every container when an instance is destroyed.

//go:build unix

package agent

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"dispatch-tui/engine/runner"
)

func (a *agent) kill(id, signal string) int {
	dir, code := a.containerDir("kill", id)
	if dir == "" {
		return code
	}
	sig := syscall.SIGTERM
	if signal == runner.SignalKill {
		sig = syscall.SIGKILL
	}
	st := a.status(dir, id)
	if st.State != runner.StateRunning {
		return 0
	}
	if st.PID == 0 {
		return a.fail(1, "runner kill %s: container is still starting; retry the kill", id)
	}
	if pr, err := readPIDRecord(dir); err == nil && pr.pid == st.PID && !pr.rebooted() && alive(pr.pid, pr.start) && st.PID > 1 {
		// The command leads its own session and process group: signal
		// the whole group, so its children go too.
		if err := syscall.Kill(-st.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return a.fail(1, "runner kill %s: %v", id, err)
		}
	}
	if sig == syscall.SIGKILL {
		// A killed "docker run" client leaves its container behind.
		if spec, err := readSpecFile(dir); err == nil && spec.Image != "" {
			if docker, err := exec.LookPath("docker"); err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
				exec.CommandContext(ctx, docker, "kill", "--signal=KILL", id).Run()
				cancel()
			}
		}
	}
	return 0
}

// KillAll sends SIGKILL to every container still running under stateDir
// (its whole process group) and to its supervisor: what destroying an
// instance does to the containers on it. Finished containers are skipped,
// and so is any process whose start time does not match its record (the
// pid was reused by something else).
func KillAll(stateDir string) {
	ents, err := os.ReadDir(stateDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !runner.ValidID(e.Name()) {
			continue
		}
		dir := filepath.Join(stateDir, e.Name())
		if _, done := readExitRecord(dir); done {
			continue
		}
		r, err := readPIDRecord(dir)
		if err != nil || r.exit != nil || r.rebooted() {
			continue // a pid of an earlier boot may be anyone's now
		}
		if r.spid > 1 && r.sstart != "" && alive(r.spid, r.sstart) {
			syscall.Kill(-r.spid, syscall.SIGKILL)
			syscall.Kill(r.spid, syscall.SIGKILL)
		}
		if r.pid > 1 && r.start != "" && alive(r.pid, r.start) {
			syscall.Kill(-r.pid, syscall.SIGKILL)
		}
	}
}
