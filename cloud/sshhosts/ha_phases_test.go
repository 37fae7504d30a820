//go:build linux

// What a takeover after kill -9 is made of, read from the new leader's
// log and the starts file: the lease, the engine's open, the first
// listing, the start-up wait, the first start.

package sshhosts

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// logLine is one JSON line of a node's log: its time, message and the
// attributes this file reads.
type logLine struct {
	Time       time.Time     `json:"time"`
	Msg        string        `json:"msg"`
	Open       time.Duration `json:"open"`
	ExpiredFor time.Duration `json:"expired_for"`
}

// logSince is every JSON line of p's log written at or after t, in order.
// Lines that are not JSON (a panic's trace) are skipped.
func (p *haProc) logSince(t time.Time) []logLine {
	f, err := os.Open(p.logPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []logLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Time.Before(t) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// takeover is one takeover after kill -9, each phase's end as an offset
// from the kill (0: not seen).
type takeover struct {
	won    time.Duration // the new leader won the lease
	open   time.Duration // its engine is open: it serves as the leader
	listed time.Duration // its first cloud listing is back
	ready  time.Duration // the start-up wait is over: the scheduler acts
	start  time.Duration // the first container started on a host
	// expired is how long the lease had been expired when it was won.
	expired time.Duration
}

// Messages of the daemon's log the phases are read from.
const (
	msgLeading     = "ha: leading; engine open"
	msgFoundInst   = "found instance"
	msgStartupOver = "start-up wait over"
)

// readTakeover reads from n's log what its takeover after the kill at
// killed was made of; ok is false until its engine is open.
func (n *haProc) readTakeover(killed time.Time) (tk takeover, opened time.Time, ok bool) {
	lines := n.logSince(killed)
	var won time.Time
	for _, l := range lines {
		if l.Msg == msgLeading {
			ok, opened, won = true, l.Time, l.Time.Add(-l.Open)
			tk.open, tk.won, tk.expired = opened.Sub(killed), won.Sub(killed), l.ExpiredFor
			break
		}
	}
	if !ok {
		return tk, opened, false
	}
	// The term's engine runs before its open is logged: its first lines
	// may come first.
	for _, l := range lines {
		switch {
		case l.Time.Before(won):
		case l.Msg == msgFoundInst && tk.listed == 0:
			tk.listed = l.Time.Sub(killed)
		case strings.HasPrefix(l.Msg, msgStartupOver) && tk.ready == 0:
			tk.ready = l.Time.Sub(killed)
		}
	}
	return tk, opened, true
}

// takeoverPoints are a takeover's moments in order, the kill first.
var takeoverPoints = []struct {
	name string
	at   func(takeover) time.Duration
}{
	{"kill", func(takeover) time.Duration { return 0 }},
	{"lease won", func(tk takeover) time.Duration { return tk.won }},
	{"engine open", func(tk takeover) time.Duration { return tk.open }},
	{"first listing", func(tk takeover) time.Duration { return tk.listed }},
	{"start-up wait over", func(tk takeover) time.Duration { return tk.ready }},
	{"first start", func(tk takeover) time.Duration { return tk.start }},
}

// gap is how long the phase ending at point i took in tk (ok false when
// either end was not seen).
func (tk takeover) gap(i int) (time.Duration, bool) {
	from, to := takeoverPoints[i-1].at(tk), takeoverPoints[i].at(tk)
	if to == 0 || (from == 0 && i > 1) {
		return 0, false
	}
	return to - from, true
}

// String is the takeover's phases, each with its own length.
func (tk takeover) String() string {
	var b strings.Builder
	for i := 1; i < len(takeoverPoints); i++ {
		d, ok := tk.gap(i)
		s := "-"
		if ok {
			s = d.Round(time.Millisecond).String()
		}
		fmt.Fprintf(&b, "%s→%s %s; ", takeoverPoints[i-1].name, takeoverPoints[i].name, s)
	}
	fmt.Fprintf(&b, "the lease had been expired %s when won", tk.expired.Round(time.Millisecond))
	return b.String()
}

// phaseDistributions is each phase's length over the takeovers tks, as
// distributions (a phase not seen in a takeover is left out of its own).
func phaseDistributions(tks []takeover) []string {
	var out []string
	for i := 1; i < len(takeoverPoints); i++ {
		var ds []time.Duration
		for _, tk := range tks {
			if d, ok := tk.gap(i); ok {
				ds = append(ds, d)
			}
		}
		if len(ds) > 0 {
			out = append(out, fmt.Sprintf("%s → %s: %s", takeoverPoints[i-1].name, takeoverPoints[i].name, distribution(ds)))
		}
	}
	return out
}
