package runner

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// encodeList is FormatList as it was: encoding/json's Encoder, one
// status a line. The fast paths must agree with it.
func encodeList(sts []Status) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range sts {
		if err := enc.Encode(&sts[i]); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// randStatus is a status with fields drawn from what runners write and
// from what they never do (escapes, other zones, huge numbers, health).
func randStatus(r *rand.Rand) Status {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	ints := []int{0, 1, -1, 143, 137, 4194304, math.MaxInt32, math.MinInt32, math.MaxInt, math.MinInt, 1e17, 1e18, -1e18}
	zones := []*time.Location{time.UTC, time.FixedZone("", 3600), time.FixedZone("X", -5*3600-30*60), time.FixedZone("odd", 17)}
	when := func() time.Time {
		switch r.IntN(5) {
		case 0:
			return time.Time{}
		case 1:
			return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // json refuses
		}
		t := time.Unix(r.Int64N(4e9), r.Int64N(1e9)*int64(r.IntN(2)))
		return t.In(zones[r.IntN(len(zones))])
	}
	st := Status{
		ID:         pick("a", "w1-ctr-000042", "b.c_d-1", "<x>", "é", "a\"b", "a\\b", "tab\t", "\xff", "\u2028", ""),
		PID:        ints[r.IntN(len(ints))],
		State:      pick(StateRunning, StateExited, "zombie", ""),
		ExitCode:   ints[r.IntN(len(ints))],
		StartedAt:  when(),
		FinishedAt: when(),
		Signal:     pick("", "", SignalTerm, SignalKill, "9", "<&>", "\n"),
		Lost:       pick("", "", "", LostRebooted, LostKilled, LostUnknown, "why <&>", "\t"),
	}
	if r.IntN(6) == 0 {
		st.Health = &Health{State: pick(HealthHealthy, HealthStarting), Failures: r.IntN(3), LastCheck: when(), LastOutput: pick("", "ok\n", "<b>")}
	}
	return st
}

// TestFormatListMatchesEncoder: FormatList writes what encoding/json
// writes, byte for byte, and fails where it fails.
func TestFormatListMatchesEncoder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lists := [][]Status{nil, {}, benchStatuses(300)}
	for range 2000 {
		sts := make([]Status, 1+r.IntN(4))
		for i := range sts {
			sts[i] = randStatus(r)
		}
		lists = append(lists, sts)
	}
	for _, sts := range lists {
		want, werr := encodeList(sts)
		var got bytes.Buffer
		gerr := FormatList(&got, sts)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("%+v: error %v, encoding/json's %v", sts, gerr, werr)
		}
		if werr == nil && !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("%+v:\n got %q\nwant %q", sts, got.Bytes(), want)
		}
	}
}

// checkFast fails t when parseStatusFast accepts line and json.Unmarshal
// does not, or decodes it differently. It reports whether the fast path
// took the line.
func checkFast(t *testing.T, line []byte) bool {
	t.Helper()
	return checkAgainstJSON(t, line, func(b []byte, st *Status) bool { return parseStatusFast(b, st, "") })
}

// checkAgainstJSON fails t when parse (a fast path) accepts line and
// json.Unmarshal does not, or decodes it differently. It reports whether
// parse took the line.
func checkAgainstJSON[T any](t *testing.T, line []byte, parse func([]byte, *T) bool) bool {
	t.Helper()
	var fast T
	if !parse(line, &fast) {
		return false
	}
	var slow T
	if err := json.Unmarshal(line, &slow); err != nil {
		t.Fatalf("%q: fast path took %+v, encoding/json: %v", line, fast, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q:\nfast %+v\njson %+v", line, fast, slow)
	}
	return true
}

// mutate returns line with one random edit of the kind that takes a line
// out of the fast path's shape or into an edge of it.
func mutate(r *rand.Rand, line []byte) []byte {
	b := bytes.Clone(line)
	if len(b) == 0 {
		return b
	}
	special := []byte("\"\\,}{: 0-19e.+nulaZ\x00\x1f\x7f\x80\xff")
	i := r.IntN(len(b))
	switch r.IntN(6) {
	case 0: // replace
		b[i] = special[r.IntN(len(special))]
	case 1: // delete
		b = append(b[:i], b[i+1:]...)
	case 2: // insert
		b = append(b[:i], append([]byte{special[r.IntN(len(special))]}, b[i:]...)...)
	case 3: // truncate
		b = b[:i]
	case 4: // repeat a piece
		j := i + r.IntN(len(b)-i+1)
		b = append(b[:j], append(bytes.Clone(b[i:j]), b[j:]...)...)
	case 5: // change a key's case: json matches keys case-insensitively
		b = bytes.Replace(b, []byte(`"pid"`), []byte(`"PID"`), 1)
	}
	return b
}

// TestParseStatusFast: on the lines FormatList writes and on mutations
// of them, the fast path agrees with encoding/json whenever it answers,
// and it answers for every line a runner writes.
func TestParseStatusFast(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var lines [][]byte
	for range 3000 {
		st := randStatus(r)
		if b, err := encodeList([]Status{st}); err == nil {
			lines = append(lines, bytes.TrimSuffix(b, []byte("\n")))
		}
	}
	// A rebooted host lists every container lost: those lines are a
	// runner's too.
	lost := benchStatuses(300)
	for i := 0; i < len(lost); i += 5 {
		lost[i].State, lost[i].ExitCode, lost[i].FinishedAt, lost[i].Signal, lost[i].Lost = StateExited, -1, time.Time{}, "", LostRebooted
	}
	plain, _ := encodeList(lost)
	for _, line := range bytes.Split(bytes.TrimSuffix(plain, []byte("\n")), []byte("\n")) {
		if !checkFast(t, line) {
			t.Fatalf("fast path refused a runner's line %q", line)
		}
		lines = append(lines, line)
	}
	took, mutated := 0, 0
	for _, line := range lines {
		if checkFast(t, line) {
			took++
		}
		for range 10 {
			m := line
			for range 1 + r.IntN(3) {
				m = mutate(r, m)
				if checkFast(t, m) {
					mutated++
				}
			}
		}
	}
	// Both sides of the comparison must have been exercised.
	if took < len(lines)/10 || mutated == 0 {
		t.Fatalf("fast path took %d of %d lines and %d mutated ones", took, len(lines), mutated)
	}
	t.Logf("fast path took %d of %d lines, %d mutated ones", took, len(lines), mutated)
}

// TestParseListFallback: lines the fast path refuses still parse, as
// encoding/json reads them.
func TestParseListFallback(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       Status
	}{
		{"spaces", `{ "id": "a", "state": "running" }`, Status{ID: "a", State: StateRunning}},
		{"order", `{"state":"exited","id":"a","exit_code":3}`, Status{ID: "a", State: StateExited, ExitCode: 3}},
		{"escape", `{"id":"\u0061","state":"running"}`, Status{ID: "a", State: StateRunning}},
		{"health", `{"id":"a","pid":1,"state":"running","exit_code":0,"started_at":"0001-01-01T00:00:00Z","health":{"state":"healthy","failures":0}}`,
			Status{ID: "a", PID: 1, State: StateRunning, Health: &Health{State: HealthHealthy}}},
		{"key case", `{"ID":"a","State":"running"}`, Status{ID: "a", State: StateRunning}},
		{"unknown field", `{"id":"a","pid":1,"state":"running","exit_code":0,"started_at":"0001-01-01T00:00:00Z","new":[1]}`, Status{ID: "a", PID: 1, State: StateRunning}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sts, err := ParseList([]byte(tc.line + "\n"))
			if err != nil || len(sts) != 1 || !reflect.DeepEqual(sts[0], tc.want) {
				t.Fatalf("got %+v, %v; want %+v", sts, err, tc.want)
			}
		})
	}
	for _, bad := range []string{`{"id":"a","pid":01,"state":"running"}`, `{"id":"a","pid":1e99,"state":"running"}`, `{"id":"a","state":"running"}x`,
		`{"id":"a","state":"running","lost":"supervisor gone: runner killed"}`} {
		if sts, err := ParseList([]byte(bad)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s: got %+v, %v; want an error for line 1", bad, sts, err)
		}
	}
}

// TestListParserReadAgainAllocatesOnlyItsSlice: a runner's list read again
// as it was (a probe of a quiet instance) is parsed into its slice of
// statuses and nothing else: each id is the string of the list before,
// the same as ParseList's; a changed line gets a string of its own.
func TestListParserReadAgainAllocatesOnlyItsSlice(t *testing.T) {
	var buf bytes.Buffer
	if err := FormatList(&buf, benchStatuses(256)); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	var lp ListParser
	first, err := lp.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(20, func() {
		if _, err := lp.Parse(data); err != nil {
			t.Fatal(err)
		}
	}); allocs > 1 {
		t.Errorf("a list of 256 read again took %.0f allocations, want 1 (its slice)", allocs)
	}
	again, err := lp.Parse(data)
	want, _ := ParseList(data)
	if err != nil || !reflect.DeepEqual(again, want) {
		t.Fatalf("read again: %v; differs from ParseList's", err)
	}
	if unsafe.StringData(again[7].ID) != unsafe.StringData(first[7].ID) {
		t.Errorf("an id read again is a new string")
	}
	changed := bytes.Replace(data, []byte(first[7].ID), []byte("w1-ctr-99999x"), 1)
	sts, err := lp.Parse(changed)
	if err != nil || sts[7].ID != "w1-ctr-99999x" || sts[8].ID != first[8].ID {
		t.Fatalf("a changed line: %v, ids %q %q", err, sts[7].ID, sts[8].ID)
	}
}
