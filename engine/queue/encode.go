// Writing the store's records and events, and the API's container views,
// as JSON without reflection.

package queue

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"dispatch-tui/engine/view"
)

// The store's records are JSON, read back with encoding/json. A flush
// writes thousands of them per pass, and reflection-driven json.Marshal was
// most of its cost, so records and events are written by the hand-made
// appenders below into one reused buffer. Their output is byte for byte
// what json.Marshal writes (TestAppendContainerMatchesMarshal,
// TestAppendMatchesMarshal*, FuzzAppend): the store's format does not
// change. The rare parts (a health
// check, a time outside the years 0–9999) are handed to json.Marshal.
//
// A record has about five times, ten strings, nine integers and a
// duration, so these are written by hand too: time.Time.AppendFormat and
// Duration.String (which allocates) were half the cost. A record's times
// share their text or date (timeText), strings are checked for bytes to
// escape eight at a time, integers are written two digits a division.

// appendContainer appends c's stored JSON to b: the view's without its
// health (see Container.Health).
func appendContainer(b []byte, c *Container) ([]byte, error) {
	h := containerHead{c.State, c.Priority, c.Held, &c.RuntimeConstraints, c.FirstSeenAt,
		c.KillRequested, c.RunnerSeen, c.LogsTruncated.Bytes()}
	return appendContainerJSON(b, &h, &c.ContainerBody, &c.ContainerTail, false)
}

// AppendViewJSON appends v's JSON to b, byte for byte what encoding/json
// writes for it (TestAppendViewJSONMatchesMarshal): the API sends a page
// of changed containers to every watching console, and encoding them by
// reflection was an eighth of the daemon's core in the churn
// (BENCHMARKS.md, helper garbage). It fails where json.Marshal would (a
// time outside the years 0–9999).
func AppendViewJSON(b []byte, v *view.Container) ([]byte, error) {
	h := containerHead{v.State, v.Priority, v.Held, &v.RuntimeConstraints, v.FirstSeenAt,
		v.KillRequested, v.RunnerSeen, v.LogsTruncated}
	return appendContainerJSON(b, &h, &v.ContainerBody, &v.ContainerTail, true)
}

// containerHead is the fields a record and its view both have around
// their body, in the view's types (the record packs some of them:
// view.Container says why they are spelled twice).
type containerHead struct {
	state         State
	priority      int
	held          bool
	rc            *Constraints
	firstSeenAt   time.Time
	killRequested bool
	runnerSeen    bool
	logsTruncated int64
}

// appendContainerJSON appends a container's JSON in view.Container's field
// order, with its health when withHealth (the store keeps none).
func appendContainerJSON(b []byte, h *containerHead, c *view.ContainerBody, t *view.ContainerTail, withHealth bool) ([]byte, error) {
	var err error
	var times timeText
	b = append(b, `{"state":`...)
	b = appendJSONString(b, string(h.state))
	b = append(b, `,"priority":`...)
	b = appendInt(b, int64(h.priority))
	b = append(b, `,"held":`...)
	b = strconv.AppendBool(b, h.held)
	b = append(b, `,"runtime_constraints":{"vcpus":`...)
	rc := h.rc
	b = appendInt(b, int64(rc.VCPUs))
	b = append(b, `,"ram":`...)
	b = appendInt(b, rc.RAM)
	b = append(b, `,"scratch":`...)
	b = appendInt(b, rc.Scratch)
	b = append(b, `,"gpus":`...)
	b = appendInt(b, int64(rc.GPUs))
	b = append(b, `},"first_seen_at":`...)
	if b, err = times.append(b, h.firstSeenAt); err != nil {
		return b, err
	}
	b = append(b, `,"id":`...)
	b = appendJSONString(b, c.ID)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, c.Name)
	b = append(b, `,"command":`...)
	b = appendJSONStrings(b, c.Command)
	if len(c.Env) > 0 {
		b = append(b, `,"env":`...)
		b = appendJSONMap(b, c.Env)
	}
	if c.Image != "" {
		b = append(b, `,"image":`...)
		b = appendJSONString(b, c.Image)
	}
	if len(c.Labels) > 0 {
		b = append(b, `,"labels":`...)
		b = appendJSONMap(b, c.Labels)
	}
	b = append(b, `,"scheduling":{"preemptible":`...)
	if p := c.Scheduling.Preemptible; p == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendBool(b, *p)
	}
	b = append(b, `,"max_run_time":`...)
	b = appendJSONDuration(b, time.Duration(c.Scheduling.MaxRunTime))
	if len(c.Scheduling.Constraints) > 0 {
		b = append(b, `,"constraints":`...)
		b = appendJSONMap(b, c.Scheduling.Constraints)
	}
	if c.Scheduling.Supervisor {
		b = append(b, `,"supervisor":true`...)
	}
	b = append(b, `},"exit_code":`...)
	if c.ExitCode == nil {
		b = append(b, "null"...)
	} else {
		b = appendInt(b, int64(*c.ExitCode))
	}
	b = append(b, `,"attempts":`...)
	b = appendInt(b, int64(c.Attempts))
	b = append(b, `,"max_attempts":`...)
	b = appendInt(b, int64(c.MaxAttempts))
	b = append(b, `,"restart_policy":`...)
	b = appendJSONString(b, c.RestartPolicy)
	b = append(b, `,"instance_type":`...)
	b = appendJSONString(b, c.InstanceType)
	b = append(b, `,"instance_id":`...)
	b = appendJSONString(b, c.InstanceID)
	b = append(b, `,"created_at":`...)
	if b, err = times.append(b, c.CreatedAt); err != nil {
		return b, err
	}
	if !c.LockedAt.IsZero() {
		b = append(b, `,"locked_at":`...)
		if b, err = times.append(b, c.LockedAt); err != nil {
			return b, err
		}
	}
	if !c.StartedAt.IsZero() {
		b = append(b, `,"started_at":`...)
		if b, err = times.append(b, c.StartedAt); err != nil {
			return b, err
		}
	}
	if !c.FinishedAt.IsZero() {
		b = append(b, `,"finished_at":`...)
		if b, err = times.append(b, c.FinishedAt); err != nil {
			return b, err
		}
	}
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, c.Reason)
	b = append(b, `,"reason_code":`...)
	b = appendJSONString(b, string(c.ReasonCode))
	if h.killRequested {
		b = append(b, `,"kill_requested":true`...)
	}
	if h.runnerSeen {
		b = append(b, `,"runner_seen":true`...)
	}
	if h.logsTruncated != 0 {
		b = append(b, `,"logs_truncated":`...)
		b = appendInt(b, h.logsTruncated)
	}
	if t.KillReason != "" {
		b = append(b, `,"kill_reason":`...)
		b = appendJSONString(b, t.KillReason)
	}
	if t.LogsError != "" {
		b = append(b, `,"logs_error":`...)
		b = appendJSONString(b, t.LogsError)
	}
	b = append(b, `,"seq":`...)
	b = appendUint(b, t.Seq)
	if t.HealthCheck != nil {
		b = append(b, `,"health_check":`...)
		if b, err = appendMarshal(b, t.HealthCheck); err != nil {
			return b, err
		}
	}
	if withHealth && t.Health != nil {
		b = append(b, `,"health":`...)
		if b, err = appendMarshal(b, t.Health); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendEvent appends e's stored JSON to b.
func appendEvent(b []byte, e *Event) ([]byte, error) {
	var err error
	var times timeText
	b = append(b, `{"seq":`...)
	b = appendUint(b, e.Seq)
	b = append(b, `,"time":`...)
	if b, err = times.append(b, e.Time); err != nil {
		return b, err
	}
	b = append(b, `,"actor":`...)
	b = appendJSONString(b, e.Actor)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, e.Kind)
	b = append(b, `,"target":`...)
	b = appendJSONString(b, e.Target)
	b = append(b, `,"action":`...)
	b = appendJSONString(b, e.Action)
	if e.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, e.Reason)
	}
	return append(b, '}'), nil
}

// appendMarshal appends json.Marshal's encoding of v.
func appendMarshal(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// jsonEscaped has a '1' at each byte encoding/json does not copy as it is
// into a string: ASCII controls, the quote and backslash, <, > and & (it
// escapes HTML), and every byte of a multi-byte UTF-8 sequence, which is
// looked at as a rune.
const jsonEscaped = "" +
	"1111111111111111" + // 0x00
	"1111111111111111" + // 0x10
	"0010001000000000" + // 0x20: " &
	"0000000000001010" + // 0x30: < >
	"0000000000000000" + // 0x40
	"0000000000001000" + // 0x50: backslash
	"0000000000000000" + // 0x60
	"0000000000000000" + // 0x70 (DEL is copied)
	"1111111111111111" + "1111111111111111" + "1111111111111111" + "1111111111111111" +
	"1111111111111111" + "1111111111111111" + "1111111111111111" + "1111111111111111"

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted, escaped as encoding/json escapes it.
func appendJSONString(b []byte, s string) []byte {
	// Eight bytes at a time while none needs a look: a byte needs one if
	// it is non-ASCII or a control, or equal to one of the five escaped
	// characters (" and & differ in one bit, as do < and >, so three tests
	// for a zero byte cover them).
	i := 0
	for ; i+8 <= len(s); i += 8 {
		t := s[i : i+8] // one load, no bounds checks
		x := uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
			uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
		const ones, highs = 0x0101010101010101, 0x8080808080808080
		qa := (x ^ ones*'"') &^ (ones * ('"' ^ '&'))
		lg := (x ^ ones*'<') &^ (ones * ('<' ^ '>'))
		bs := x ^ ones*'\\'
		// (v-ones)&^v has a byte's high bit set only if some byte of v is
		// zero; (x-0x20s)&^x, only if some byte of x is below 0x20.
		if ((qa-ones)&^qa|(lg-ones)&^lg|(bs-ones)&^bs|(x-ones*' ')&^x|x)&highs != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if jsonEscaped[s[i]] != '0' {
			return appendJSONStringEscaped(b, s, i)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONStringEscaped appends s quoted, s[:i] needing no escapes. The
// escapes are encoding/json's: \\, \", \b, \f, \n, \r, \t, \u00XX for
// other controls and <, >, &; \ufffd for each byte of invalid UTF-8, and
// \u2028, \u2029; any other rune is copied.
func appendJSONStringEscaped(b []byte, s string, i int) []byte {
	b = append(b, '"')
	start := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonEscaped[c] == '0' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJSONStrings appends ss as a JSON array (null when nil).
func appendJSONStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// appendJSONMap appends m as a JSON object with sorted keys, as
// encoding/json writes maps.
func appendJSONMap(b []byte, m map[string]string) []byte {
	type entry struct{ k, v string }
	var small [16]entry // most maps are small: sort them on the stack
	entries := small[:0]
	for k, v := range m {
		entries = append(entries, entry{k, v}) // no second look-up of v
	}
	slices.SortFunc(entries, func(x, y entry) int { return strings.Compare(x.k, y.k) })
	b = append(b, '{')
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, e.k)
		b = append(b, ':')
		b = appendJSONString(b, e.v)
	}
	return append(b, '}')
}

// appendInt appends v in decimal, as strconv.AppendInt(b, v, 10).
func appendInt(b []byte, v int64) []byte {
	if v < 0 {
		return appendUint(append(b, '-'), -uint64(v))
	}
	return appendUint(b, uint64(v))
}

// appendUint appends v in decimal, as strconv.AppendUint(b, v, 10), two
// digits a division.
func appendUint(b []byte, v uint64) []byte {
	if v < 10 {
		return append(b, byte('0'+v))
	}
	var a [20]byte
	i := len(a)
	for v >= 100 {
		q := v / 100
		r := v - 100*q
		i -= 2
		a[i], a[i+1] = digitPairs[2*r], digitPairs[2*r+1]
		v = q
	}
	if v >= 10 {
		i -= 2
		a[i], a[i+1] = digitPairs[2*v], digitPairs[2*v+1]
	} else {
		i--
		a[i] = byte('0' + v)
	}
	return append(b, a[i:]...)
}

// digitPairs is "00" to "99", for writing two digits at once.
const digitPairs = "" +
	"0001020304050607080910111213141516171819" +
	"2021222324252627282930313233343536373839" +
	"4041424344454647484950515253545556575859" +
	"6061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// The Unix times of 0000-01-01T00:00:00 and 10000-01-01T00:00:00: the
// years time.Time.MarshalJSON writes.
const (
	unixYear0     = -62167219200
	unixYear10000 = 253402300800
)

// timeText writes times as time.Time.MarshalJSON does, remembering the
// last one: a record's times are mostly the same instant (created and
// first seen, locked and started in one pass) or the same day.
type timeText struct {
	n    int   // length of text; 0 when nothing is remembered
	sec  int64 // the wall clock's seconds (in UTC terms) of text
	ns   int
	off  int
	day  int64                                              // the day of text's date (since year 0)
	text [len(`"2006-01-02T15:04:05.999999999+07:00"`)]byte // quoted
}

// append appends t as MarshalJSON does: RFC 3339 with the nanoseconds'
// trailing zeros dropped, Z for a zero offset, quoted. A time it refuses
// (a year outside 0–9999, an offset of a day or more) gets its error.
func (tt *timeText) append(b []byte, t time.Time) ([]byte, error) {
	off := 0
	if t.Location() != time.UTC {
		_, off = t.Zone()
	}
	sec := t.Unix() + int64(off) // the wall clock's seconds, as if in UTC
	if sec < unixYear0 || sec >= unixYear10000 || off <= -24*3600 || off >= 24*3600 {
		return appendMarshal(b, t)
	}
	ns := t.Nanosecond()
	if tt.n > 0 && sec == tt.sec && ns == tt.ns && off == tt.off {
		return append(b, tt.text[:tt.n]...), nil
	}
	tt.sec, tt.ns, tt.off = sec, ns, off
	since0 := sec - unixYear0
	a := &tt.text
	if day := since0 / 86400; tt.n == 0 || day != tt.day {
		tt.day = day
		y, m, d := civilDate(uint32(day))
		a[0] = '"'
		put2(a[1:], y/100)
		put2(a[3:], y%100)
		a[5] = '-'
		put2(a[6:], m)
		a[8] = '-'
		put2(a[9:], d)
		a[11] = 'T'
		a[14] = ':'
		a[17] = ':'
	}
	s := uint32(since0 % 86400)
	put2(a[12:], s/3600)
	put2(a[15:], s/60%60)
	put2(a[18:], s%60)
	n := 20
	if ns != 0 {
		u := uint32(ns)
		a[20] = '.'
		a[21] = byte('0' + u/1e8)
		u %= 1e8
		put2(a[22:], u/1e6)
		put2(a[24:], u/1e4%100)
		put2(a[26:], u/100%100)
		put2(a[28:], u%100)
		n = 30
		for a[n-1] == '0' {
			n--
		}
	}
	if off == 0 {
		a[n] = 'Z'
		n++
	} else {
		// Minutes, truncated toward zero, as the time package writes them.
		zone := off / 60
		a[n] = '+'
		if zone < 0 {
			a[n] = '-'
			zone = -zone
		}
		put2(a[n+1:], uint32(zone/60))
		a[n+3] = ':'
		put2(a[n+4:], uint32(zone%60))
		n += 6
	}
	a[n] = '"'
	tt.n = n + 1
	return append(b, a[:tt.n]...), nil
}

// put2 writes v (< 100) as two digits at the start of a.
func put2(a []byte, v uint32) {
	_ = a[1]
	a[0] = digitPairs[2*v]
	a[1] = digitPairs[2*v+1]
}

// civilDate returns the year, month and day of the day days after
// 0000-01-01 in the proleptic Gregorian calendar. The count is moved to
// start at 0000-03-01 (so that a leap day ends a year) plus one 400-year
// cycle (so that it is never negative); within a cycle the year, and then
// the month from the day of a March-based year, follow by arithmetic.
func civilDate(days uint32) (year, month, day uint32) {
	// 32 bits are enough (10,000 years are 3.7M days) and divide faster.
	const cycle = 146097   // days in 400 years
	z := days + cycle - 60 // 0000 is a leap year: 60 days to March 1st
	era := z / cycle
	doe := z % cycle                                       // day of the cycle, [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // year of the cycle, [0, 399]
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // day of the March-based year, [0, 365]
	mp := (5*doy + 2) / 153                                // month from March, [0, 11]
	day = doy - (153*mp+2)/5 + 1
	month = mp + 3
	if mp >= 10 {
		month = mp - 9
	}
	year = yoe + era*400
	if month <= 2 {
		year++
	}
	return year - 400, month, day
}

// appendJSONDuration appends d as Duration.MarshalJSON does (d.String(),
// quoted), without the string: "1h2m3.5s", "1.5ms", "250µs", "0s". The
// text needs no escapes (µ is copied as it is).
func appendJSONDuration(b []byte, d time.Duration) []byte {
	if d == 0 {
		return append(b, `"0s"`...)
	}
	// Written backwards from the end of a.
	var a [len(`"-2562047h47m16.854775808s"`)]byte
	w := len(a) - 1
	a[w] = '"'
	u := uint64(d)
	if d < 0 {
		u = -u
	}
	w--
	a[w] = 's'
	switch {
	case u < uint64(time.Microsecond):
		w--
		a[w] = 'n'
		w = putUintBack(a[:w], u)
	case u < uint64(time.Millisecond):
		w -= len("µ")
		copy(a[w:], "µ")
		w, u = putFracBack(a[:w], u, 3)
		w = putUintBack(a[:w], u)
	case u < uint64(time.Second):
		w--
		a[w] = 'm'
		w, u = putFracBack(a[:w], u, 6)
		w = putUintBack(a[:w], u)
	default:
		w, u = putFracBack(a[:w], u, 9)
		w = putUintBack(a[:w], u%60) // seconds
		if u /= 60; u > 0 {
			w--
			a[w] = 'm'
			w = putUintBack(a[:w], u%60)
			if u /= 60; u > 0 {
				w--
				a[w] = 'h'
				w = putUintBack(a[:w], u)
			}
		}
	}
	if d < 0 {
		w--
		a[w] = '-'
	}
	w--
	a[w] = '"'
	return append(b, a[w:]...)
}

// putFracBack writes the last prec digits of v as a fraction (".5", no
// trailing zeros, nothing when they are all zero) to end at the end of a,
// and returns where it starts and v without them.
func putFracBack(a []byte, v uint64, prec int) (int, uint64) {
	w := len(a)
	digits := false
	for range prec {
		dig := v % 10
		digits = digits || dig != 0
		if digits {
			w--
			a[w] = byte('0' + dig)
		}
		v /= 10
	}
	if digits {
		w--
		a[w] = '.'
	}
	return w, v
}

// putUintBack writes v in decimal to end at the end of a, and returns
// where it starts.
func putUintBack(a []byte, v uint64) int {
	w := len(a)
	for {
		w--
		a[w] = byte('0' + v%10)
		if v /= 10; v == 0 {
			return w
		}
	}
}

// decodeEvent decodes one stored event, which must have Seq seq.
func decodeEvent(seq uint64, j []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(j, &e); err != nil {
		return e, fmt.Errorf("read event %d: %w", seq, err)
	}
	if e.Seq != seq {
		return e, fmt.Errorf("read event %d: stored with seq %d", seq, e.Seq)
	}
	return e, nil
}
