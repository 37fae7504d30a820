// The "runner list" output format, written and parsed without reflection.

package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// FormatList writes statuses as "runner list" output: one JSON object per
// line, byte for byte what encoding/json's Encoder writes for each Status.
// A runner writes it for every probe, so the common line is appended
// without reflection; a status this cannot write exactly (a health
// object, a string that needs escaping, a time json refuses) is written
// by encoding/json.
func FormatList(w io.Writer, sts []Status) error {
	const flushAt = 32 << 10
	// A runner's line is about 150 bytes; a longer one grows buf.
	buf := make([]byte, 0, min(len(sts)*160, flushAt)+512)
	for i := range sts {
		var err error
		if buf, err = appendListLine(buf, &sts[i]); err != nil {
			return err
		}
		if len(buf) >= flushAt {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	if len(buf) == 0 {
		return nil
	}
	_, err := w.Write(buf)
	return err
}

// AppendList appends what FormatList writes to b: an in-memory runner's
// list (cloud/fake) in one buffer of its size.
func AppendList(b []byte, sts []Status) ([]byte, error) {
	b = slices.Grow(b, len(sts)*192) // a line is about 150 bytes
	for i := range sts {
		var err error
		if b, err = appendListLine(b, &sts[i]); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendListLine appends st's line: appendStatus, or encoding/json for
// what it cannot write.
func appendListLine(b []byte, st *Status) ([]byte, error) {
	if out, ok := appendStatus(b, st); ok {
		return out, nil
	}
	// What appendStatus wrote past len(b) is junk (its out may be nil).
	line, err := json.Marshal(st)
	if err != nil {
		return b, err
	}
	return append(append(b, line...), '\n'), nil
}

// appendStatus appends st as encoding/json would marshal it, and a
// newline; ok is false (and b holds junk after its old length) when it
// cannot.
func appendStatus(b []byte, st *Status) (_ []byte, ok bool) {
	if st.Health != nil {
		return b, false
	}
	b = append(b, `{"id":`...)
	if b, ok = appendPlainString(b, st.ID); !ok {
		return b, false
	}
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(st.PID), 10)
	b = append(b, `,"state":`...)
	if b, ok = appendPlainString(b, st.State); !ok {
		return b, false
	}
	b = append(b, `,"exit_code":`...)
	b = strconv.AppendInt(b, int64(st.ExitCode), 10)
	b = append(b, `,"started_at":`...)
	if b, ok = appendTime(b, st.StartedAt); !ok {
		return b, false
	}
	if !st.FinishedAt.IsZero() {
		b = append(b, `,"finished_at":`...)
		if b, ok = appendTime(b, st.FinishedAt); !ok {
			return b, false
		}
	}
	if st.Signal != "" {
		b = append(b, `,"signal":`...)
		if b, ok = appendPlainString(b, st.Signal); !ok {
			return b, false
		}
	}
	if st.Lost != "" {
		b = append(b, `,"lost":`...)
		if b, ok = appendPlainString(b, st.Lost); !ok {
			return b, false
		}
	}
	return append(b, "}\n"...), true
}

// appendPlainString appends s quoted when encoding/json would write it
// unescaped: printable ASCII other than the quote, the backslash and the
// characters it escapes for HTML.
func appendPlainString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

func plainByte(c byte) bool {
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

// appendTime appends t as time.Time's MarshalJSON does: RFC 3339 with
// nanoseconds, quoted. AppendText refuses what MarshalJSON refuses.
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return b, false
	}
	return append(b, '"'), true
}

// ListParser parses the lists of one runner, read one after another (a
// pool's probes of an instance): each list's ids are kept, and a line of
// the next whose id is the one at the same line before takes the kept
// string rather than a new one. A list read again as it was, which is
// what a probe of a quiet instance reads, allocates its slice of statuses
// and nothing per line. The zero value is ready; it is not safe for
// concurrent use.
type ListParser struct {
	ids []string
}

// Parse parses "runner list" output as ParseList does.
func (lp *ListParser) Parse(data []byte) ([]Status, error) {
	sts, err := parseList(data, lp.ids)
	if err != nil {
		return nil, err
	}
	lp.ids = lp.ids[:0]
	for i := range sts {
		lp.ids = append(lp.ids, sts[i].ID)
	}
	return sts, nil
}

// parseList parses data, one JSON object a line, blank lines ignored; a
// line's id equal to prev's at the same index is prev's string.
func parseList(data []byte, prev []string) ([]Status, error) {
	n := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++ // a last line without its newline
	}
	out := make([]Status, 0, n)
	for line := 1; len(data) > 0; line++ {
		b := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			b, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(b) > maxListLine {
			return nil, fmt.Errorf("runner list line %d: longer than %d bytes", line, maxListLine)
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		prevID := ""
		if n := len(out); n < len(prev) {
			prevID = prev[n]
		}
		// Parsed in place: a Status on the stack would escape to the heap
		// through encoding/json's fallback, one allocation a line.
		out = append(out, Status{})
		st := &out[len(out)-1]
		if err := parseStatus(b, st, prevID); err != nil {
			return nil, fmt.Errorf("runner list line %d: %w", line, err)
		}
		if !ValidID(st.ID) {
			return nil, fmt.Errorf("runner list line %d: invalid id %q", line, st.ID)
		}
		if st.State != StateRunning && st.State != StateExited {
			return nil, fmt.Errorf("runner list line %d: invalid state %q", line, st.State)
		}
		if st.Lost != "" && st.State != StateExited {
			return nil, fmt.Errorf("runner list line %d: %s container marked lost", line, st.State)
		}
	}
	if len(out) == 0 {
		return nil, nil // no statuses: nil, as ever
	}
	return out, nil
}

// maxListLine is the longest line of a list read: a status is about 150
// bytes, a thousand times that is not a runner's.
const maxListLine = 1 << 20

// parseStatus parses one non-blank line of "runner list" output into st
// as json.Unmarshal does: through parseStatusFast when the line is in the
// shape appendStatus writes, else through encoding/json. An id equal to
// prevID is prevID's string.
func parseStatus(line []byte, st *Status, prevID string) error {
	if parseStatusFast(line, st, prevID) {
		return nil
	}
	*st = Status{}
	return json.Unmarshal(line, st)
}

// parseStatusFast parses line when it is exactly what appendStatus
// writes (the keys in its order, no white space, no escapes, integers
// that fit), and reports whether it did. What it accepts, json.Unmarshal
// accepts too and decodes to the same Status (FuzzParseStatusFast); for
// anything else it returns false and the caller asks encoding/json, which
// reads health objects, other orders, escapes, and reports errors.
func parseStatusFast(line []byte, st *Status, prevID string) bool {
	p := listParser{b: line}
	var id, state, signal, lost []byte
	ok := p.lit(`{"id":`) && p.str(&id) &&
		p.lit(`,"pid":`) && p.int(&st.PID) &&
		p.lit(`,"state":`) && p.str(&state) &&
		p.lit(`,"exit_code":`) && p.int(&st.ExitCode) &&
		p.lit(`,"started_at":`) && p.time(&st.StartedAt)
	if !ok {
		return false
	}
	if p.lit(`,"finished_at":`) && !p.time(&st.FinishedAt) {
		return false
	}
	if p.lit(`,"signal":`) && !p.str(&signal) {
		return false
	}
	if p.lit(`,"lost":`) && !p.str(&lost) {
		return false
	}
	if !p.lit("}") || len(p.b) != 0 {
		return false
	}
	if string(id) == prevID {
		st.ID = prevID
	} else {
		st.ID = string(id)
	}
	st.State = internState(state)
	st.Signal = internSignal(signal)
	st.Lost = internLost(lost)
	return true
}

// listParser reads the tokens of a list line from the front of b.
type listParser struct{ b []byte }

// lit consumes s when it comes next, and reports whether it did.
func (p *listParser) lit(s string) bool {
	if len(p.b) < len(s) || string(p.b[:len(s)]) != s {
		return false
	}
	p.b = p.b[len(s):]
	return true
}

// str reads a quoted string of printable ASCII without escapes: JSON that
// decodes to exactly its bytes.
func (p *listParser) str(out *[]byte) bool {
	if len(p.b) == 0 || p.b[0] != '"' {
		return false
	}
	for i := 1; i < len(p.b); i++ {
		switch c := p.b[i]; {
		case c == '"':
			*out = p.b[1:i]
			p.b = p.b[i+1:]
			return true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return false
		}
	}
	return false
}

// int reads a JSON integer (-?(0|[1-9][0-9]*)) of at most 18 digits that
// fits in an int.
func (p *listParser) int(out *int) bool {
	i, neg := 0, false
	if len(p.b) > 0 && p.b[0] == '-' {
		i, neg = 1, true
	}
	start := i
	var v int64
	for i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9' {
		v = v*10 + int64(p.b[i]-'0')
		i++
	}
	n := i - start
	if n == 0 || n > 18 || (n > 1 && p.b[start] == '0') {
		return false
	}
	if neg {
		v = -v
	}
	if int64(int(v)) != v {
		return false
	}
	*out = int(v)
	p.b = p.b[i:]
	return true
}

// time reads a quoted time as time.Time's UnmarshalJSON does (which takes
// the string's bytes as they are, unescaped).
func (p *listParser) time(out *time.Time) bool {
	var s []byte
	return p.str(&s) && out.UnmarshalText(s) == nil
}

// internState returns the state constant for s, so that a list of
// thousands does not allocate a copy of "exited" per line.
func internState(s []byte) string {
	switch string(s) {
	case StateRunning:
		return StateRunning
	case StateExited:
		return StateExited
	}
	return string(s)
}

func internSignal(s []byte) string {
	switch string(s) {
	case "":
		return ""
	case SignalTerm:
		return SignalTerm
	case SignalKill:
		return SignalKill
	}
	return string(s)
}

// internLost returns the Lost constant for s (a rebooted host lists every
// one of its containers lost, all with the same reason).
func internLost(s []byte) string {
	switch string(s) {
	case "":
		return ""
	case LostRebooted:
		return LostRebooted
	case LostKilled:
		return LostKilled
	case LostUnknown:
		return LostUnknown
	}
	return string(s)
}
