//go:build unix

package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"dispatch-tui/engine/runner"
)

// pidRecord is what the pid and pid_start files (and, for directories of
// earlier runners, started_at and supervisor) say.
type pidRecord struct {
	pid     int
	start   string // the command's start time in clock ticks; "" = unknown
	started time.Time
	spid    int // the supervisor; 0 = see the supervisor file (earlier runners)
	sstart  string
	exit    *exitRecord // pid_start's exit line, once appended
	legacy  bool        // the pid came from an earlier runner's pid file
}

// formatPIDRecord renders pid_start (the first line of exit).
func formatPIDRecord(r pidRecord) []byte {
	return fmt.Appendf(nil, "%s %s %d %s %d\n", orDash(r.start), r.started.UTC().Format(time.RFC3339Nano), r.spid, orDash(r.sstart), r.pid)
}

// formatExitLine renders the second line of the exit file.
func formatExitLine(code int, finished time.Time) []byte {
	return fmt.Appendf(nil, "%d %s\n", code, finished.UTC().Format(time.RFC3339Nano))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func unDash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// readLines returns the lines of path's content when it is complete (ends
// with a newline); an error wrapping errNotWritten when it is there but
// empty or unterminated.
func readLines(path string) ([]string, error) {
	b, err := readSmall(path)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, fmt.Errorf("%s: %w", path, errNotWritten)
	}
	return strings.Split(string(b[:len(b)-1]), "\n"), nil
}

// parsePIDLine parses the five fields of formatPIDRecord.
func parsePIDLine(line string) (r pidRecord, ok bool) {
	f := strings.Fields(line)
	if len(f) < 5 {
		return r, false
	}
	var err error
	if r.pid, err = strconv.Atoi(f[4]); err != nil || r.pid < 0 {
		return r, false
	}
	r.start = unDash(f[0])
	r.started = parseTime(f[1])
	r.spid, _ = strconv.Atoi(f[2])
	r.sstart = unDash(f[3])
	return r, true
}

// parseExitLine parses formatExitLine.
func parseExitLine(line string) (r exitRecord, ok bool) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return r, false
	}
	var err error
	if r.code, err = strconv.Atoi(f[0]); err != nil {
		return r, false
	}
	r.finished = parseTime(f[1])
	return r, !r.finished.IsZero()
}

// errNotWritten: a state file is there but not complete. For pid_start,
// the supervisor has yet to write it (in a recycled directory it is there,
// empty, from the start).
var errNotWritten = errors.New("not written yet")

// readPIDRecord reads pid_start of the container in dir: five fields,
// with the exit line after them once the command ended. Without pid_start
// (earlier runners renamed it to exit when the command ended), or with
// pid_start as the oldest runners wrote it (the start time alone, with
// started_at in its own file), the pid comes from the pid file ("<pid>"),
// which those runners wrote after pid_start.
func readPIDRecord(dir string) (pidRecord, error) {
	var r pidRecord
	lines, err := readLines(filepath.Join(dir, filePIDStart))
	if errors.Is(err, errNotWritten) {
		return r, err
	}
	if err == nil {
		if m, ok := parsePIDLine(lines[0]); ok && m.pid > 0 {
			if len(lines) > 1 {
				if ex, ok := parseExitLine(lines[1]); ok {
					ex.pid, ex.started, ex.full = m.pid, m.started, true
					m.exit = &ex
				}
			}
			return m, nil
		}
		r.start = strings.TrimSpace(lines[0])
	}
	pid, _, err := readPIDFile(filepath.Join(dir, filePID))
	if err != nil {
		return pidRecord{}, err
	}
	r.pid, r.legacy = pid, true
	r.started = readTime(filepath.Join(dir, fileStartedAt))
	return r, nil
}

// supervisor returns the supervisor of the container in dir: from the pid
// file, or from the supervisor file of earlier runners.
func (r pidRecord) supervisor(dir string) (pid int, start string) {
	if r.spid > 0 {
		return r.spid, r.sstart
	}
	pid, start, err := readPIDFile(filepath.Join(dir, fileSupervisor))
	if err != nil {
		return 0, ""
	}
	return pid, start
}

// exitRecord is what the exit file (and, for directories of earlier
// runners, finished_at) says.
type exitRecord struct {
	code     int
	finished time.Time
	pid      int
	started  time.Time
	full     bool // pid and started are set: nothing else to read
}

// readExitRecord reads the exit file of the container in dir: the pid
// file's line and the exit line "<code> <finished_at>"; or (earlier
// runners) "<code>" alone, with the time in finished_at. ok is false when
// there is none (yet).
func readExitRecord(dir string) (r exitRecord, ok bool) {
	path := filepath.Join(dir, fileExit)
	lines, err := readLines(path)
	if err != nil {
		return r, false
	}
	if len(lines) >= 2 {
		p, ok1 := parsePIDLine(lines[0])
		ex, ok2 := parseExitLine(lines[1])
		if !ok1 || !ok2 {
			return r, false
		}
		ex.pid, ex.started, ex.full = p.pid, p.started, true
		return ex, true
	}
	f := strings.Fields(lines[0])
	if len(f) != 1 {
		return r, false
	}
	if r.code, err = strconv.Atoi(f[0]); err != nil {
		return r, false
	}
	r.finished = readTime(filepath.Join(dir, fileFinishedAt))
	if r.finished.IsZero() {
		r.finished = modTime(path)
	}
	return r, true
}

// fill sets st's exit fields, and its pid and start time when the record
// has them.
func (r exitRecord) fill(st *runner.Status) {
	st.State, st.ExitCode, st.FinishedAt = runner.StateExited, r.code, r.finished
	if r.full {
		st.PID, st.StartedAt = r.pid, r.started
	}
}

// readPIDFile reads "<pid>[ <starttime>]".
func readPIDFile(path string) (pid int, start string, err error) {
	b, err := readSmall(path)
	if err != nil {
		return 0, "", err
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return 0, "", fmt.Errorf("%s: not written yet", path)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, "", fmt.Errorf("%s: empty", path)
	}
	pid, err = strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, "", fmt.Errorf("%s: bad pid %q", path, f[0])
	}
	if len(f) > 1 {
		start = f[1]
	}
	return pid, start, nil
}
