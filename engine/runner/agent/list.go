// "runner list": every container's status line.

//go:build unix

package agent

import (
	"errors"
	"os"
	"slices"
	"strings"
	"time"

	"dispatch-tui/engine/runner"
)

// list writes every container's status line, or only id's when id is
// set (exit 1 when there is no such container).
func (a *agent) list(id string) int {
	if id != "" {
		dir, code := a.containerDir("list", id)
		if code != 0 {
			return code
		}
		if err := runner.FormatList(a.stdout, []runner.Status{a.status(dir, id)}); err != nil {
			return a.fail(1, "runner list: %v", err)
		}
		return 0
	}
	root, exists, err := a.stateRoot(false)
	if err != nil {
		return a.fail(1, "runner list: %v", err)
	}
	if !exists {
		return 0
	}
	// One descriptor of the root for the whole list: every container's
	// files are read relative to it (see ctrDir).
	f, err := os.Open(root)
	if err != nil {
		return a.fail(1, "runner list: %v", err)
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return a.fail(1, "runner list: %v", err)
	}
	fd := int(f.Fd())
	sts := make([]runner.Status, 0, len(ents))
	for _, e := range ents {
		if !e.IsDir() || !safeID(e.Name()) {
			continue
		}
		sts = append(sts, a.statusAt(ctrDir{fd: fd, name: e.Name()}, e.Name()))
	}
	slices.SortFunc(sts, func(x, y runner.Status) int { return strings.Compare(x.ID, y.ID) })
	if err := runner.FormatList(a.stdout, sts); err != nil {
		return a.fail(1, "runner list: %v", err)
	}
	return 0
}

// status reads the state of the container in dir.
//
// A container is exited once pid_start holds its exit line (or, for a
// command that could not be started, once an exit file exists). Without one it is running while its command
// is alive, and also while its supervisor is alive (the command just ended
// and the supervisor is about to record the exit), unless the host booted
// again since (then their pids name other processes). When both are gone
// without an exit record it is exited with code -1 and Lost says why (the
// host rebooted, or the supervisor was killed): no exit code of the
// program's own. A directory without a pid record is starting for
// startingGrace after it was made, then lost the same way.
//
// pid_start holds everything list reports, so a container costs one open
// and one read, plus a look at /proc while it runs.
func (a *agent) status(dir, id string) runner.Status {
	return a.statusAt(absDir(dir), id)
}

// statusAt is status of the container in d.
func (a *agent) statusAt(d ctrDir, id string) runner.Status {
	st := runner.Status{ID: id, State: runner.StateRunning}
	pr, pidErr := readPIDRecordAt(d)
	if pidErr == nil && pr.exit != nil {
		pr.exit.fill(&st)
		addHealth(d, pr, &st)
		return st
	}
	switch {
	case pidErr == nil:
		st.PID = pr.pid
		st.StartedAt = pr.started
	case errors.Is(pidErr, errNotWritten):
		st.StartedAt = d.modTime("") // made (or claimed) by start
	default:
		st.StartedAt = bornTime(d)
	}
	if pidErr != nil {
		// A start that failed has an exit file instead.
		if ex, ok := readExitRecordAt(d); ok {
			ex.fill(&st)
			return st
		}
		// "start" makes the directory, then the supervisor writes the
		// pid record: a directory without one is starting for a while.
		if since := a.env.Now().Sub(st.StartedAt); since >= 0 && since < startingGrace {
			return st // starting
		}
		// Its supervisor died before it recorded a pid (or never ran),
		// and with no record there is no boot id to tell why.
		st.State, st.ExitCode, st.Lost = runner.StateExited, -1, runner.LostUnknown
		return st
	}
	rebooted := pr.rebooted()
	switch {
	case !rebooted && alive(pr.pid, pr.start):
	case !rebooted && alive(pr.spid, pr.sstart): // the supervisor is recording the exit
	case a.readExit(d, &st): // written between the checks above
	default:
		st.State, st.ExitCode, st.Lost = runner.StateExited, -1, pr.lostReason()
	}
	addHealth(d, pr, &st)
	return st
}

// bornTime is when the container in d was made: its spec file's time
// (written first, for a container with an image), else the directory's.
func bornTime(d ctrDir) time.Time {
	if t := d.modTime(fileSpec); !t.IsZero() {
		return t
	}
	return d.modTime("")
}

// readExit fills the exit code and finished time from the exit file and
// reports whether there is one.
func (a *agent) readExit(d ctrDir, st *runner.Status) bool {
	if ex, ok := readExitRecordAt(d); ok {
		ex.fill(st)
		return true
	}
	if pr, err := readPIDRecordAt(d); err == nil && pr.exit != nil {
		pr.exit.fill(st)
		return true
	}
	return false
}
