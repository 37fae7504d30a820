// Reading the store's records without reflection: the reader that matches
// encode.go's appenders, with encoding/json behind it for anything else.

package queue

import (
	"bytes"
	"encoding/json"
	"math"
	"time"
	"unicode/utf8"

	"dispatch-tui/engine/view"
)

// A start-up decodes every stored record, and encoding/json took about
// 13 µs a record (2 s of a start at 100,000 containers). recordReader
// reads a record laid out exactly as appendContainer writes it — its keys
// in its order, its optional keys where it puts them, compact — in one
// pass. Anything else (an older layout, a key it does not know, a number
// or a string it would have to guess about) it refuses, and the record is
// decoded by encoding/json as before. What it accepts it decodes exactly
// as json.Unmarshal does (TestReadRecord*, FuzzReadRecord): the two paths
// never disagree about a record.

// decodeContainer decodes stored record j into c, which is zero: by
// recordReader, else by encoding/json with the upgrade of older records.
func decodeContainer(j []byte, c *Container) error {
	r := recordReader{b: j}
	if r.record(c) {
		return nil
	}
	*c = Container{}
	if err := json.Unmarshal(j, c); err != nil {
		return err
	}
	return c.upgrade(j)
}

// RecordKey reads the Seq and id of a stored record (tools that read a
// store without a queue: store copy).
func RecordKey(body []byte) (uint64, string, error) {
	var c Container
	if r := (recordReader{b: body}); r.record(&c) {
		return c.Seq, c.ID, nil
	}
	var k struct {
		ID  string `json:"id"`
		Seq uint64 `json:"seq"`
	}
	err := json.Unmarshal(body, &k)
	return k.Seq, k.ID, err
}

// ReadView decodes j, a container's view as AppendViewJSON writes it (an
// attached console's changes page), into v and reports whether it could;
// when it could not, v is untouched and j is for encoding/json. What it
// decodes, it decodes as json.Unmarshal would into a zero v
// (TestReadViewMatchesUnmarshal*): the console's copy is the same either
// way, and a page is read without reflection.
func ReadView(j []byte, v *view.Container) bool {
	var c Container
	r := recordReader{b: j, view: true}
	if !r.record(&c) {
		return false
	}
	*v = viewOf(&c, &r)
	return true
}

// viewOf is the view of c as r read it.
func viewOf(c *Container, r *recordReader) view.Container {
	return view.Container{
		State: c.State, Priority: c.Priority, Held: c.Held,
		RuntimeConstraints: c.RuntimeConstraints, FirstSeenAt: c.FirstSeenAt,
		ContainerBody: c.ContainerBody, KillRequested: c.KillRequested, RunnerSeen: c.RunnerSeen,
		LogsTruncated: r.logsTruncated, ContainerTail: c.ContainerTail,
	}
}

// recordReader reads one record from b. A read that meets anything it
// does not expect sets bad and returns a zero value; later reads go on
// harmlessly (every one checks its bounds) and the record is refused.
type recordReader struct {
	b   []byte
	i   int
	bad bool
	// view: b is a view as AppendViewJSON writes it, which may end with
	// the container's health (a record never has one).
	view bool
	// logsTruncated is logs_truncated as read: a record keeps it rounded
	// (TruncatedOutput), a view as it is.
	logsTruncated int64
	// text holds the last string that had escapes, unescaped.
	text []byte
	// lastTime is the text (in b) of the last time read fast, and last
	// its value: a record's times are mostly one instant (created and
	// first seen, locked and started).
	lastTime []byte
	last     time.Time
	// pairs, when set, takes the labels and constraints instead of
	// their maps (ReadViewPairs).
	pairs *Pairs
}

// record reads the whole of b into c and reports whether it could.
func (r *recordReader) record(c *Container) bool {
	r.lit(`{"state":`)
	c.State = r.state()
	r.lit(`,"priority":`)
	c.Priority = r.int()
	r.lit(`,"held":`)
	c.Held = r.bool()
	rc := &c.RuntimeConstraints
	r.lit(`,"runtime_constraints":{"vcpus":`)
	rc.VCPUs = r.int()
	r.lit(`,"ram":`)
	rc.RAM = r.int64()
	r.lit(`,"scratch":`)
	rc.Scratch = r.int64()
	r.lit(`,"gpus":`)
	rc.GPUs = r.int()
	r.lit(`},"first_seen_at":`)
	c.FirstSeenAt = r.time()
	r.lit(`,"id":`)
	c.ID = r.str()
	r.lit(`,"name":`)
	c.Name = r.str()
	r.lit(`,"command":`)
	c.Command = r.strs()
	if r.opt(`,"env":`) {
		c.Env = r.strMap()
	}
	if r.opt(`,"image":`) {
		c.Image = r.str()
	}
	if r.opt(`,"labels":`) {
		c.Labels = r.strMapOr(false)
	}
	r.lit(`,"scheduling":{"preemptible":`)
	c.Scheduling.Preemptible = r.boolPtr()
	r.lit(`,"max_run_time":`)
	c.Scheduling.MaxRunTime = r.duration()
	if r.opt(`,"constraints":`) {
		c.Scheduling.Constraints = r.strMapOr(true)
	}
	c.Scheduling.Supervisor = r.opt(`,"supervisor":true`)
	r.lit(`},"exit_code":`)
	c.ExitCode = r.intPtr()
	r.lit(`,"attempts":`)
	c.Attempts = r.int()
	r.lit(`,"max_attempts":`)
	c.MaxAttempts = r.int()
	r.lit(`,"restart_policy":`)
	c.RestartPolicy = r.restartPolicy()
	r.lit(`,"instance_type":`)
	c.InstanceType = r.str()
	r.lit(`,"instance_id":`)
	c.InstanceID = r.str()
	r.lit(`,"created_at":`)
	c.CreatedAt = r.time()
	if r.opt(`,"locked_at":`) {
		c.LockedAt = r.time()
	}
	if r.opt(`,"started_at":`) {
		c.StartedAt = r.time()
	}
	if r.opt(`,"finished_at":`) {
		c.FinishedAt = r.time()
	}
	r.lit(`,"reason":`)
	c.Reason = r.str()
	r.lit(`,"reason_code":`)
	c.ReasonCode = ReasonCode(r.str())
	c.KillRequested = r.opt(`,"kill_requested":true`)
	c.RunnerSeen = r.opt(`,"runner_seen":true`)
	if r.opt(`,"logs_truncated":`) {
		// TruncatedOutput.UnmarshalJSON's rule: bytes, not negative.
		n := r.int64()
		r.bad = r.bad || n < 0
		c.LogsTruncated, r.logsTruncated = TruncatedBytes(n), n
	}
	if r.opt(`,"kill_reason":`) {
		c.KillReason = r.str()
	}
	if r.opt(`,"logs_error":`) {
		c.LogsError = r.str()
	}
	r.lit(`,"seq":`)
	c.Seq = r.uint()
	if r.opt(`,"health_check":`) {
		// Rare, and written by json.Marshal: read by json.Unmarshal, as
		// the last value of the record. A view's health may follow it:
		// such a view is left to encoding/json.
		// Into a pointer of its own: &c.HealthCheck given to json put
		// every record read on the heap (c with it), used or not.
		end := len(r.b) - 1
		var hc *view.HealthCheck
		if r.view || end < r.i || r.b[end] != '}' || json.Unmarshal(r.b[r.i:end], &hc) != nil {
			return false
		}
		c.HealthCheck, r.i = hc, end
	}
	if r.view && r.opt(`,"health":`) {
		// A view's last value, when it has one: as health_check above.
		end := len(r.b) - 1
		var h *view.Health
		if end < r.i || r.b[end] != '}' || json.Unmarshal(r.b[r.i:end], &h) != nil {
			return false
		}
		c.Health, r.i = h, end
	}
	r.lit(`}`)
	return !r.bad && r.i == len(r.b)
}

// opt reads s if it comes next.
func (r *recordReader) opt(s string) bool {
	if len(r.b)-r.i >= len(s) && string(r.b[r.i:r.i+len(s)]) == s {
		r.i += len(s)
		return true
	}
	return false
}

// lit reads s, which must come next.
func (r *recordReader) lit(s string) {
	if !r.opt(s) {
		r.bad = true
	}
}

func (r *recordReader) bool() bool {
	if r.opt("true") {
		return true
	}
	r.lit("false")
	return false
}

func (r *recordReader) boolPtr() *bool {
	if r.opt("null") {
		return nil
	}
	v := r.bool()
	return &v
}

// number reads a JSON integer: an optional minus, then 0 or digits not
// starting with 0. A fraction or an exponent is not read (the next
// literal then does not match: json.Unmarshal refuses them for integer
// fields too).
func (r *recordReader) number() (neg bool, u uint64) {
	b, i := r.b, r.i
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	start := i
	for ; i < len(b) && b[i]-'0' < 10; i++ {
		d := uint64(b[i] - '0')
		if u > (math.MaxUint64-d)/10 {
			r.bad = true
			return false, 0
		}
		u = u*10 + d
	}
	if i == start || b[start] == '0' && i-start > 1 {
		r.bad = true
		return false, 0
	}
	r.i = i
	return neg, u
}

func (r *recordReader) int64() int64 {
	neg, u := r.number()
	switch {
	case neg && u <= 1<<63:
		return int64(-u)
	case !neg && u <= math.MaxInt64:
		return int64(u)
	}
	r.bad = true
	return 0
}

func (r *recordReader) int() int {
	v := r.int64()
	if int64(int(v)) != v {
		r.bad = true
	}
	return int(v)
}

func (r *recordReader) intPtr() *int {
	if r.opt("null") {
		return nil
	}
	v := r.int()
	return &v
}

func (r *recordReader) uint() uint64 {
	neg, u := r.number()
	if neg { // even -0: json.Unmarshal refuses a sign for an unsigned field
		r.bad = true
	}
	return u
}

// quoted reads a JSON string and returns its text, valid until the next
// read: a slice of b when it has no escapes, else r.text. Invalid UTF-8
// (which json.Unmarshal would replace) and \u escapes of surrogates
// (which it would pair or replace) are refused.
func (r *recordReader) quoted() []byte {
	b, i := r.b, r.i
	if i >= len(b) || b[i] != '"' {
		r.bad = true
		return nil
	}
	i++
	end := bytes.IndexByte(b[i:], '"')
	if end < 0 {
		r.bad = true
		return nil
	}
	end += i
	for j := i; j < end; j++ {
		if c := b[j]; c == '\\' || c < ' ' || c >= utf8.RuneSelf {
			return r.unescape(i)
		}
	}
	r.i = end + 1
	return b[i:end]
}

// unescape reads the rest of a string starting at b[i] (its opening
// quote read) into r.text.
func (r *recordReader) unescape(i int) []byte {
	b := r.b
	t := r.text[:0]
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			r.i, r.text = i+1, t
			return t
		case c < ' ':
			r.bad = true
			return nil
		case c >= utf8.RuneSelf:
			ru, n := utf8.DecodeRune(b[i:])
			if ru == utf8.RuneError && n == 1 {
				r.bad = true
				return nil
			}
			t = append(t, b[i:i+n]...)
			i += n
			continue
		case c != '\\':
			t = append(t, c)
			i++
			continue
		}
		if i+1 >= len(b) {
			r.bad = true
			return nil
		}
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			t = append(t, e)
		case 'b':
			t = append(t, '\b')
		case 'f':
			t = append(t, '\f')
		case 'n':
			t = append(t, '\n')
		case 'r':
			t = append(t, '\r')
		case 't':
			t = append(t, '\t')
		case 'u':
			ru, ok := hex4(b[i+2:])
			if !ok || ru >= 0xd800 && ru < 0xe000 {
				r.bad = true
				return nil
			}
			t = utf8.AppendRune(t, ru)
			i += 4
		default:
			r.bad = true
			return nil
		}
		i += 2
	}
	r.bad = true
	return nil
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var v rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | rune(c)
	}
	return v, true
}

func (r *recordReader) str() string { return string(r.quoted()) }

// state reads a state, sharing the constant's text.
func (r *recordReader) state() State {
	t := r.quoted()
	for _, s := range States {
		if string(t) == string(s) {
			return s
		}
	}
	return State(t)
}

// restartPolicy reads a restart policy, sharing the constant's text.
func (r *recordReader) restartPolicy() string {
	t := r.quoted()
	switch string(t) {
	case RestartNever:
		return RestartNever
	case RestartOnFailure:
		return RestartOnFailure
	}
	return string(t)
}

// strs reads a list of strings, or null.
func (r *recordReader) strs() []string {
	if r.opt("null") {
		return nil
	}
	r.lit("[")
	ss := []string{}
	if r.opt("]") {
		return ss
	}
	for !r.bad {
		ss = append(ss, r.str())
		if r.opt("]") {
			return ss
		}
		r.lit(",")
	}
	return nil
}

// strMap reads an object of strings, or null.
func (r *recordReader) strMap() map[string]string {
	if r.opt("null") {
		return nil
	}
	r.lit("{")
	m := map[string]string{}
	if r.opt("}") {
		return m
	}
	for !r.bad {
		k := r.str()
		r.lit(":")
		m[k] = r.str()
		if r.opt("}") {
			return m
		}
		r.lit(",")
	}
	return nil
}

// strMapOr reads an object of strings into r.pairs when set (nil
// returned), else as strMap.
func (r *recordReader) strMapOr(constraint bool) map[string]string {
	if r.pairs == nil {
		return r.strMap()
	}
	if r.opt("null") {
		return nil
	}
	r.lit("{")
	if r.opt("}") {
		return nil
	}
	for !r.bad {
		// The key kept apart: reading the value may reuse r.text.
		at := len(r.pairs.text)
		r.pairs.text = append(r.pairs.text, r.quoted()...)
		k := len(r.pairs.text)
		r.lit(":")
		r.pairs.text = append(r.pairs.text, r.quoted()...)
		r.pairs.pairs = append(r.pairs.pairs, pair{constraint: constraint, k: int32(at), v: int32(k), end: int32(len(r.pairs.text))})
		if r.opt("}") {
			return nil
		}
		r.lit(",")
	}
	return nil
}

// duration reads a Duration as the text Duration.MarshalJSON writes (a
// number, which Duration.UnmarshalJSON also takes, is refused).
func (r *recordReader) duration() Duration {
	t := r.quoted()
	if string(t) == "0s" || r.bad {
		return 0
	}
	d, err := time.ParseDuration(string(t))
	if err != nil {
		r.bad = true
	}
	return Duration(d)
}

// time reads a time as time.Time.UnmarshalJSON does: a UTC time of the
// form MarshalJSON writes by hand, anything else by UnmarshalJSON itself.
func (r *recordReader) time() time.Time {
	b, i := r.b, r.i
	if i >= len(b) || b[i] != '"' {
		r.bad = true
		return time.Time{}
	}
	end := bytes.IndexByte(b[i+1:], '"')
	if end < 0 {
		r.bad = true
		return time.Time{}
	}
	end += i + 2 // past the closing quote
	text := b[i:end]
	r.i = end
	if bytes.Equal(text, r.lastTime) {
		return r.last
	}
	if t, ok := parseUTC(text); ok {
		r.lastTime, r.last = text, t
		return t
	}
	// An offset, a comma, more than nine digits of a fraction: the time
	// package's own reading. An escape or a control would be read by
	// encoding/json first, so those are refused.
	for _, c := range text {
		if c == '\\' || c < ' ' {
			r.bad = true
			return time.Time{}
		}
	}
	var t time.Time
	if t.UnmarshalJSON(text) != nil {
		r.bad = true
	}
	return t
}

// parseUTC reads quoted "YYYY-MM-DDTHH:MM:SS[.F]Z" (F one to nine digits)
// as time.Parse(time.RFC3339) does: in UTC, a day that is in its month.
func parseUTC(s []byte) (time.Time, bool) {
	const short = len(`"2006-01-02T15:04:05Z"`)
	if len(s) < short || len(s) > short+10 || s[5] != '-' || s[8] != '-' || s[11] != 'T' || s[14] != ':' || s[17] != ':' ||
		s[len(s)-2] != 'Z' {
		return time.Time{}, false
	}
	yh, ok1 := digits2(s[1:])
	yl, ok2 := digits2(s[3:])
	mo, ok3 := digits2(s[6:])
	d, ok4 := digits2(s[9:])
	h, ok5 := digits2(s[12:])
	mi, ok6 := digits2(s[15:])
	sec, ok7 := digits2(s[18:])
	y := yh*100 + yl
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || mo < 1 || mo > 12 || d < 1 || d > daysIn(mo, y) ||
		h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	ns := 0
	if frac := s[20 : len(s)-2]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 {
			return time.Time{}, false
		}
		scale := 1_000_000_000
		for _, c := range frac[1:] {
			if c-'0' >= 10 {
				return time.Time{}, false
			}
			scale /= 10
			ns += int(c-'0') * scale
		}
	}
	unix := civilDays(y, mo, d)*86400 + int64(h*3600+mi*60+sec)
	return time.Unix(unix, int64(ns)).UTC(), true
}

// digits2 reads two decimal digits.
func digits2(s []byte) (int, bool) {
	a, b := s[0]-'0', s[1]-'0'
	return int(a)*10 + int(b), a < 10 && b < 10
}

// daysIn is the number of days of month m of year y.
func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// civilDays is the number of days from 1970-01-01 to y-m-d (y in 0–9999)
// in the proleptic Gregorian calendar: civilDate's arithmetic backwards,
// on years that start in March, one 400-year cycle later so as never to
// be negative.
func civilDays(y, m, d int) int64 {
	const cycle = 146097 // days in 400 years
	if m <= 2 {
		y--
	}
	y += 400
	era, yoe := y/400, y%400
	mp := (m + 9) % 12 // month from March
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	// 719468: days from 0000-03-01 to 1970-01-01.
	return int64(era*cycle+doe) - cycle - 719468
}
