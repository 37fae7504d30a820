// Reading process state and start times from /proc cheaply.

//go:build unix

package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// procStat returns the state letter (field 3) and start time in clock
// ticks (field 22, as text) of pid from /proc/<pid>/stat. It runs for
// every container started and every running one listed, so it reads with
// bare system calls (os.ReadFile would also try the poller and fstat).
func procStat(pid int) (state byte, start string, err error) {
	b, err := readSmall("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", err
	}
	state, start, ok := parseProcStat(b)
	if !ok {
		return 0, "", fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	return state, start, nil
}

// parseProcStat returns fields 3 and 22 of a /proc/<pid>/stat line.
func parseProcStat(b []byte) (state byte, start string, ok bool) {
	// The command name (field 2) is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, "", false
	}
	rest := b[i+1:]
	for field := 3; ; field++ {
		rest = bytes.TrimLeft(rest, " ")
		end := bytes.IndexAny(rest, " \n")
		if end < 0 {
			end = len(rest)
		}
		if end == 0 {
			return 0, "", false
		}
		switch field {
		case 3:
			state = rest[0]
		case 22:
			return state, string(rest[:end]), true
		}
		rest = rest[end:]
	}
}

// procStart returns pid's start time for later alive checks, "" when /proc
// does not say.
func procStart(pid int) string {
	_, start, err := procStat(pid)
	if err != nil {
		return ""
	}
	return start
}

// alive reports whether pid runs and, when start is known, is the process
// that started then (not a later one that reuses the pid). Zombies count as
// dead. Without /proc it falls back to kill(pid, 0).
func alive(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	state, st, err := procStat(pid)
	if err == nil {
		if state == 'Z' || state == 'X' || state == 'x' {
			return false
		}
		return start == "" || st == start
	}
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat("/proc/self/stat"); serr == nil {
			return false // /proc works and has no such process
		}
	}
	kerr := syscall.Kill(pid, 0)
	return kerr == nil || errors.Is(kerr, syscall.EPERM)
}

// startClock gives the start times of the commands a supervisor forks as
// procStart reads them, from the boot clock around each fork (bootTick)
// instead of /proc when the clock did not tick across it. It reads /proc
// until one fork tells whether the two agree, and keeps reading it for
// good if they did not.
type startClock struct {
	checked, trusted bool
}

// start returns the start of pid, forked between the bootTick results
// t0 (ok0) and now.
func (c *startClock) start(pid int, t0 uint64, ok0 bool) string {
	t1, ok1 := bootTick()
	same := ok0 && ok1 && t0 == t1
	if same && c.trusted {
		return strconv.FormatUint(t0, 10)
	}
	st := procStart(pid)
	if same && !c.checked && st != "" {
		c.checked = true
		c.trusted = st == strconv.FormatUint(t0, 10)
	}
	return st
}
