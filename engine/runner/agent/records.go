// The records in a container's directory: pid_start and exit lines.

//go:build unix

package agent

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"dispatch-tui/engine/runner"
)

// pidRecord is what pid_start says.
type pidRecord struct {
	pid     int
	start   string // the command's start time in clock ticks; "" = unknown
	started time.Time
	spid    int // the supervisor
	sstart  string
	exit    *exitRecord // pid_start's exit line, once appended
	health  bool        // a health checker runs beside it (health.go): field "h"
	boot    string      // the boot id when the supervisor started: field "boot=<id>"; "" = unknown
}

// bootPrefix starts pid_start's boot id field.
const bootPrefix = "boot="

// rebooted reports whether the host booted again since r was written:
// then neither its command nor its supervisor can be running, whatever
// process has their pids now.
func (r pidRecord) rebooted() bool {
	now := bootID()
	return r.boot != "" && now != "" && r.boot != now
}

// lostReason is why the container of r, with no exit recorded and no
// process left, has no exit code: runner.Status.Lost.
func (r pidRecord) lostReason() string {
	switch {
	case r.rebooted():
		return runner.LostRebooted
	case r.boot != "" && r.boot == bootID():
		return runner.LostKilled
	}
	return runner.LostUnknown
}

// formatPIDRecord renders pid_start (the first line of exit).
func formatPIDRecord(r pidRecord) []byte {
	b := fmt.Appendf(nil, "%s %s %d %s %d", orDash(r.start), r.started.UTC().Format(time.RFC3339Nano), r.spid, orDash(r.sstart), r.pid)
	// Optional fields follow the five; "h" stays sixth, where runners
	// before the boot id look for it.
	if r.health {
		b = append(b, " h"...)
	}
	if r.boot != "" {
		b = append(append(append(b, ' '), bootPrefix...), r.boot...)
	}
	return append(b, '\n')
}

// formatExitLine renders the second line of the exit file: the exit code,
// the finish time, and the signal that ended the command ("-" for none).
// Readers ignore fields they do not know, and take a missing signal as none.
func formatExitLine(code int, finished time.Time, signal string) []byte {
	return fmt.Appendf(nil, "%d %s %s\n", code, finished.UTC().Format(time.RFC3339Nano), orDash(signal))
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

// splitLines returns the lines of b, the content of path, when it is
// complete (ends with a newline); an error wrapping errNotWritten when it
// is empty or unterminated.
func splitLines(b []byte, path string) ([]string, error) {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, fmt.Errorf("%s: %w", path, errNotWritten)
	}
	return strings.Split(string(b[:len(b)-1]), "\n"), nil
}

// parsePIDLine parses the five fields of formatPIDRecord and the optional
// ones after them; it ignores those it does not know.
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
	for _, opt := range f[5:] {
		if opt == "h" {
			r.health = true
		} else if id, ok := strings.CutPrefix(opt, bootPrefix); ok {
			r.boot = id
		}
	}
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
	if len(f) > 2 {
		r.signal = unDash(f[2])
	}
	return r, !r.finished.IsZero()
}

// errNotWritten: a state file is there but not complete. For pid_start,
// the supervisor has yet to write it (in a recycled directory it is there,
// empty, from the start).
var errNotWritten = errors.New("not written yet")

// readPIDRecord reads pid_start of the container in dir: five fields,
// with the exit line after them once the command ended.
func readPIDRecord(dir string) (pidRecord, error) {
	return readPIDRecordAt(absDir(dir))
}

// readPIDRecordAt is readPIDRecord of the container in d.
func readPIDRecordAt(d ctrDir) (pidRecord, error) {
	path := d.file(filePIDStart)
	b, err := readSmallAt(d.fd, path)
	if err != nil {
		return pidRecord{}, err
	}
	lines, err := splitLines(b, path)
	if err != nil {
		return pidRecord{}, err
	}
	r, ok := parsePIDLine(lines[0])
	if !ok || r.pid <= 0 {
		return pidRecord{}, fmt.Errorf("%s: malformed", path)
	}
	if len(lines) > 1 {
		if ex, ok := parseExitLine(lines[1]); ok {
			ex.pid, ex.started = r.pid, r.started
			r.exit = &ex
		}
	}
	return r, nil
}

// exitRecord is an exit line with the pid line before it.
type exitRecord struct {
	code     int
	finished time.Time
	signal   string // "" = exited by itself
	pid      int
	started  time.Time
}

// readExitRecord reads the exit file of the container in dir, written
// instead of pid_start's exit line when the command could not be started
// (or the line could not be appended): the pid line and the exit line. ok
// is false when there is none (yet).
func readExitRecord(dir string) (r exitRecord, ok bool) {
	return readExitRecordAt(absDir(dir))
}

// readExitRecordAt is readExitRecord of the container in d.
func readExitRecordAt(d ctrDir) (r exitRecord, ok bool) {
	path := d.file(fileExit)
	b, err := readSmallAt(d.fd, path)
	if err != nil {
		return r, false
	}
	lines, err := splitLines(b, path)
	if err != nil || len(lines) < 2 {
		return r, false
	}
	p, ok1 := parsePIDLine(lines[0])
	ex, ok2 := parseExitLine(lines[1])
	if !ok1 || !ok2 {
		return r, false
	}
	ex.pid, ex.started = p.pid, p.started
	return ex, true
}

// fill sets st's exit fields, its pid and its start time.
func (r exitRecord) fill(st *runner.Status) {
	st.State, st.ExitCode, st.FinishedAt, st.Signal = runner.StateExited, r.code, r.finished, r.signal
	st.PID, st.StartedAt = r.pid, r.started
}
