package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
)

// unmarshalRecord is what a record decoded before recordReader: by
// encoding/json, with the upgrade of older records.
func unmarshalRecord(j []byte) (Container, error) {
	var c Container
	if err := json.Unmarshal(j, &c); err != nil {
		return c, err
	}
	return c, c.upgrade(j)
}

// checkRead fails t if recordReader accepts j and decodes it otherwise
// than json.Unmarshal, or if decodeContainer (reader or fallback) does.
// It reports whether the reader accepted j.
func checkRead(t *testing.T, j []byte) bool {
	t.Helper()
	want, wantErr := unmarshalRecord(j)
	var got Container
	r := recordReader{b: j}
	ok := r.record(&got)
	if ok && wantErr != nil {
		t.Fatalf("the reader accepted a record json.Unmarshal refuses (%v):\n%s", wantErr, j)
	}
	if ok && !reflect.DeepEqual(got, want) {
		t.Fatalf("the reader decoded\n%s\n as %#v\njson.Unmarshal as %#v", j, got, want)
	}
	var dec Container
	err := decodeContainer(j, &dec)
	if (err != nil) != (wantErr != nil) || err == nil && !reflect.DeepEqual(dec, want) {
		t.Fatalf("decodeContainer of\n%s\n gave %#v, %v\njson.Unmarshal %#v, %v", j, dec, err, want, wantErr)
	}
	return ok
}

// checkReadBack fails t unless the reader accepts c as appendContainer
// writes it (everything it writes is read fast), decoding it as
// json.Unmarshal does.
func checkReadBack(t *testing.T, c *Container) {
	t.Helper()
	j, err := appendContainer(nil, c)
	if err != nil {
		return // a time MarshalJSON refuses: never stored
	}
	if !checkRead(t, j) {
		t.Fatalf("the reader refused a record appendContainer wrote:\n%s", j)
	}
}

func TestReadRecordRoundTrip(t *testing.T) {
	// Every stored field set, as stores have always held it.
	if !checkRead(t, []byte(recordWire)) {
		t.Fatalf("the reader refused recordWire")
	}
	// A pass's records, with UTC times: read back exactly as they were.
	cs, _ := benchRecords()
	for i := range cs {
		j, err := appendContainer(nil, &cs[i])
		if err != nil {
			t.Fatal(err)
		}
		var got Container
		if err := decodeContainer(j, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, cs[i]) {
			t.Fatalf("read back %#v\nwrote %#v", got, cs[i])
		}
	}
}

func TestReadRecordMatchesUnmarshalEdges(t *testing.T) {
	cs := edgeContainers()
	for i := range cs {
		checkReadBack(t, &cs[i])
	}
}

func TestReadRecordMatchesUnmarshalRandom(t *testing.T) {
	r := randomRecords{rand.New(rand.NewPCG(2026, 29))}
	for range 1500 {
		c := r.container()
		checkReadBack(t, &c)
	}
}

// Records the reader leaves to encoding/json, which must still load.
func TestReadRecordFallsBack(t *testing.T) {
	pass, _ := benchRecords()
	c := pass[1]
	c.Labels = map[string]string{"team": "a"}
	indented, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	compact, err := appendContainer(nil, &c)
	if err != nil {
		t.Fatal(err)
	}
	created := `"created_at":"` + c.CreatedAt.Format(time.RFC3339Nano) + `"`
	zoned := `"created_at":"` + c.CreatedAt.In(time.FixedZone("", 3600)).Format(time.RFC3339Nano) + `"`
	tenDigits := strings.Replace(created, `Z"`, `1Z"`, 1)
	records := map[string]string{
		"indented": string(indented),
		"older layout: placement under scheduling.labels": strings.Replace(string(compact),
			`"scheduling":{"preemptible":false,`, `"scheduling":{"preemptible":false,"labels":{"zone":"b"},`, 1),
		"a key it does not know":        strings.Replace(string(compact), `,"seq":`, `,"future":[1,{"x":null}],"seq":`, 1),
		"keys in another order":         strings.Replace(string(compact), `{"state":"Complete","priority":2,`, `{"priority":2,"state":"Complete",`, 1),
		"a key in another case":         strings.Replace(string(compact), `"priority":`, `"Priority":`, 1),
		"a duration as a number":        strings.Replace(string(compact), `"max_run_time":"0s"`, `"max_run_time":90000000000`, 1),
		"a number with a fraction":      strings.Replace(string(compact), `"priority":2`, `"priority":2.0`, 1),
		"invalid UTF-8 in a string":     strings.Replace(string(compact), `"name":"c-`, "\"name\":\"\xff-", 1),
		"a surrogate pair escaped":      strings.Replace(string(compact), `"name":"c-`, `"name":"\ud83d\ude42-`, 1),
		"a lone surrogate escaped":      strings.Replace(string(compact), `"name":"c-`, `"name":"\ud83d-`, 1),
		"a time in a zone":              strings.Replace(string(compact), created, zoned, 1),
		"a time with ten digits":        strings.Replace(string(compact), created, tenDigits, 1),
		"supervisor false written":      strings.Replace(string(compact), `,"max_run_time":"0s"`, `,"max_run_time":"0s","supervisor":false`, 1),
		"a seq with a sign":             strings.Replace(string(compact), `"seq":1000001`, `"seq":-0`, 1),
		"trailing space":                string(compact) + " ",
		"logs_truncated negative":       strings.Replace(string(compact), `,"seq":`, `,"logs_truncated":-1,"seq":`, 1),
		"an exit code out of int range": strings.Replace(string(compact), `"exit_code":0`, `"exit_code":9223372036854775808`, 1),
	}
	// Times the time package reads itself: still read by the reader.
	readsItself := map[string]bool{"a time in a zone": true, "a time with ten digits": true}
	for name, j := range records {
		if j == string(compact) {
			t.Fatalf("%s: the record did not change: %s", name, j)
		}
		if ok := checkRead(t, []byte(j)); ok != readsItself[name] {
			t.Errorf("%s: the reader accepted it: %v", name, ok)
		}
	}
	// Store copy's key of each, by the reader or by encoding/json.
	for name, j := range records {
		if name == "indented" || name == "older layout: placement under scheduling.labels" || name == "a key it does not know" {
			if seq, id, err := RecordKey([]byte(j)); seq != c.Seq || id != c.ID || err != nil {
				t.Errorf("%s: RecordKey read %d, %q, %v", name, seq, id, err)
			}
		}
	}
	if seq, id, err := RecordKey(compact); seq != c.Seq || id != c.ID || err != nil {
		t.Errorf("RecordKey read %d, %q, %v", seq, id, err)
	}
	// The older layout still upgrades.
	var old Container
	if err := decodeContainer([]byte(records["older layout: placement under scheduling.labels"]), &old); err != nil {
		t.Fatal(err)
	}
	if old.Scheduling.Constraints["zone"] != "b" || old.Labels["team"] != "a" {
		t.Errorf("older record read as constraints %v, labels %v", old.Scheduling.Constraints, old.Labels)
	}
}

// Every record a byte away from one the reader accepts: each byte
// changed to one of the bytes that matter to JSON, dropped, or doubled.
func TestReadRecordMutations(t *testing.T) {
	pass, _ := benchRecords()
	c := pass[1]
	c.Env = map[string]string{"A": "é\n<"}
	c.Scheduling.MaxRunTime = Duration(90 * time.Second)
	c.LogsTruncated, c.KillReason = 7, "x"
	j, err := appendContainer(nil, &c)
	if err != nil {
		t.Fatal(err)
	}
	subs := []byte("\"\\{}[],:0-9.eZTn u\x00\x1f\x80\xff")
	rng := rand.New(rand.NewPCG(7, 29))
	accepted := 0
	for i := range j {
		for range 4 { // of subs, at random: all of them take too long under -race
			s := subs[rng.IntN(len(subs))]
			m := bytes.Clone(j)
			m[i] = s
			if checkRead(t, m) {
				accepted++
			}
		}
		if checkRead(t, append(bytes.Clone(j[:i]), j[i+1:]...)) {
			accepted++
		}
		if checkRead(t, append(bytes.Clone(j[:i+1]), j[i:]...)) {
			accepted++
		}
	}
	if accepted == 0 {
		t.Fatal("the reader accepted no mutation: the test compares nothing")
	}
}

// The calendar arithmetic against the time package, day by day at the
// ends of the years stored and around now, and on random days between.
func TestCivilDays(t *testing.T) {
	check := func(y, m, d int) {
		want := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Unix() / 86400 // midnight: exact
		if got := civilDays(y, m, d); got != want {
			t.Fatalf("civilDays(%d, %d, %d) = %d, want %d", y, m, d, got, want)
		}
	}
	for _, span := range [][2]int{{0, 5}, {1599, 1601}, {1899, 1901}, {1969, 2101}, {9995, 9999}} {
		for y := span[0]; y <= span[1]; y++ {
			for m := 1; m <= 12; m++ {
				for d := 1; d <= daysIn(m, y); d++ {
					check(y, m, d)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		y, m := rng.IntN(10000), 1+rng.IntN(12)
		check(y, m, 1+rng.IntN(daysIn(m, y)))
	}
}

// FuzzReadRecord holds the reader to json.Unmarshal on any input (it
// accepts only what json.Unmarshal decodes the same way) and to the
// appenders (it accepts what they write):
//
//	go test -run='^$' -fuzz=FuzzReadRecord -fuzztime=60s ./engine/queue/
func FuzzReadRecord(f *testing.F) {
	pass, _ := benchRecords()
	for _, c := range append(pass[:4], edgeContainers()[:40]...) {
		if j, err := appendContainer(nil, &c); err == nil {
			f.Add(j, "", int64(0))
		}
	}
	f.Add([]byte(`{"state":"Queued"}`), "é\x00\"", int64(-1))
	f.Fuzz(func(t *testing.T, j []byte, s string, n int64) {
		checkRead(t, j)
		checkViewRead(t, j)
		// The fuzzer's values in a record, as the appenders write it.
		code := int(n)
		tm := time.Unix(n%(1<<35), n&(1<<30-1)).UTC()
		c := Container{
			State:              State(s),
			Priority:           int(n),
			RuntimeConstraints: Constraints{VCPUs: int(n), RAM: -n, GPUs: 1},
			FirstSeenAt:        tm,
			ContainerBody: view.ContainerBody{
				ID: s, Name: s + s, Command: []string{s, ""}, Env: map[string]string{s: s},
				CreatedAt: tm, LockedAt: tm.Add(time.Duration(n)), ExitCode: &code, RestartPolicy: s,
				Scheduling: Scheduling{MaxRunTime: Duration(n), Constraints: map[string]string{"k": s}},
			},
			LogsTruncated: TruncatedOutput(uint32(n)),
			ContainerTail: view.ContainerTail{Seq: uint64(n), LogsError: s},
		}
		checkReadBack(t, &c)
		checkViewReadBack(t, c.view(Pending{}))
	})
}

// parseUTC against time.Time.UnmarshalJSON on UTC times at and past the
// edges of each field: it accepts exactly the ones UnmarshalJSON does
// (of its shape) and reads them the same.
func TestParseUTC(t *testing.T) {
	var texts []string
	for _, y := range []string{"0000", "0001", "1900", "1970", "2000", "2024", "2026", "2100", "9999"} {
		for m := 0; m <= 13; m++ {
			for _, d := range []int{0, 1, 28, 29, 30, 31, 32} {
				texts = append(texts, fmt.Sprintf("%s-%02d-%02dT12:00:00Z", y, m, d))
			}
		}
	}
	for _, hms := range []string{"00:00:00", "23:59:59", "24:00:00", "23:60:00", "23:59:60", "99:99:99", "0a:00:00", "-1:00:00"} {
		for _, frac := range []string{"", ".", ".0", ".5", ".000000001", ".123456789", ".1234567891", ".12345678912", ",5", ".a", ".-1"} {
			texts = append(texts, "2026-11-25T"+hms+frac+"Z", "2026-11-25T"+hms+frac+"+01:00")
		}
	}
	texts = append(texts, "2026-11-25 12:00:00Z", "2026-11-25T12:00:00z", "2026/11/25T12:00:00Z", "+026-11-25T12:00:00Z", "2026-11-25T12:00:00ZZ")
	accepted := 0
	for _, text := range texts {
		q := []byte(`"` + text + `"`)
		var want time.Time
		wantErr := want.UnmarshalJSON(q)
		got, ok := parseUTC(q)
		if ok {
			accepted++
		}
		switch {
		case ok && (wantErr != nil || !reflect.DeepEqual(got, want)):
			t.Errorf("%s: parseUTC read %v, UnmarshalJSON %v, %v", text, got, want, wantErr)
		case !ok && wantErr == nil && strings.HasSuffix(text, "Z") && !strings.Contains(text, ",") && len(text) <= len("2006-01-02T15:04:05.999999999Z"):
			t.Errorf("%s: parseUTC refused a time UnmarshalJSON reads as %v", text, want)
		}
	}
	if accepted < 100 {
		t.Fatalf("parseUTC accepted only %d of %d", accepted, len(texts))
	}
}

// checkViewRead fails t if ReadView accepts j and decodes it otherwise
// than json.Unmarshal into a zero view, or accepts what json.Unmarshal
// refuses. It reports whether ReadView accepted j.
func checkViewRead(t *testing.T, j []byte) bool {
	t.Helper()
	var want view.Container
	wantErr := json.Unmarshal(j, &want)
	var got view.Container
	ok := ReadView(j, &got)
	if ok && wantErr != nil {
		t.Fatalf("ReadView accepted a view json.Unmarshal refuses (%v):\n%s", wantErr, j)
	}
	if ok && !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadView decoded\n%s\n as %#v\njson.Unmarshal as %#v", j, got, want)
	}
	if !ok && !reflect.DeepEqual(got, view.Container{}) {
		t.Fatalf("ReadView refused\n%s\nbut wrote %#v", j, got)
	}
	return ok
}

// checkViewReadBack fails t unless ReadView accepts v as AppendViewJSON
// writes it — a view without a health check (left to encoding/json when
// health may follow it) — and decodes it as json.Unmarshal does.
func checkViewReadBack(t *testing.T, v view.Container) {
	t.Helper()
	j, err := AppendViewJSON(nil, &v)
	if err != nil {
		return // a time MarshalJSON refuses: never sent
	}
	if ok := checkViewRead(t, j); !ok && v.HealthCheck == nil {
		t.Fatalf("ReadView refused a view AppendViewJSON wrote:\n%s", j)
	}
}

func TestReadViewMatchesUnmarshalEdges(t *testing.T) {
	cs := edgeContainers()
	for i := range cs {
		checkViewReadBack(t, cs[i].view(Pending{}))
	}
	// A view's count of bytes cut is exact, where a record rounds it.
	for _, n := range []int64{1, 42, 1<<20 + 3, 1 << 40} {
		v := cs[0].view(Pending{})
		v.LogsTruncated = n
		checkViewReadBack(t, v)
	}
}

func TestReadViewMatchesUnmarshalRandom(t *testing.T) {
	r := randomRecords{rand.New(rand.NewPCG(2026, 11))}
	health := 0
	for range 1500 {
		c := r.container()
		if r.rng.IntN(3) == 0 { // in memory only: a view has it, a record not
			c.Health = &runner.Health{State: r.str(), Failures: r.rng.IntN(3), LastCheck: r.time(), LastResult: r.str(),
				LastOutput: r.str(), Killed: r.rng.IntN(2) == 0}
		}
		if c.Health != nil && c.HealthCheck == nil {
			health++
		}
		checkViewReadBack(t, c.view(Pending{Code: ReasonQuota}))
	}
	if health == 0 {
		t.Fatal("no random view had a health and no health check: the test reads no health")
	}
}

// Every view a byte away from one ReadView accepts (with a health, the
// value only a view has), as TestReadRecordMutations does for records.
func TestReadViewMutations(t *testing.T) {
	pass, _ := benchRecords()
	c := pass[1]
	c.Labels = map[string]string{"team": "é\n<"}
	c.Health = &runner.Health{State: "healthy", Failures: 2, LastCheck: time.Date(2026, 11, 29, 9, 0, 0, 5, time.UTC), LastResult: "ok"}
	v := c.view(Pending{})
	j, err := AppendViewJSON(nil, &v)
	if err != nil {
		t.Fatal(err)
	}
	if !checkViewRead(t, j) {
		t.Fatalf("ReadView refused\n%s", j)
	}
	subs := []byte("\"\\{}[],:0-9.eZTn u\x00\x1f\x80\xff")
	rng := rand.New(rand.NewPCG(11, 29))
	accepted := 0
	for i := range j {
		for range 3 {
			m := bytes.Clone(j)
			m[i] = subs[rng.IntN(len(subs))]
			if checkViewRead(t, m) {
				accepted++
			}
		}
		if checkViewRead(t, append(bytes.Clone(j[:i]), j[i+1:]...)) {
			accepted++
		}
	}
	if accepted == 0 {
		t.Fatal("ReadView accepted no mutation: the test compares nothing")
	}
}

// TestReadViewAllocatesOnlyTheView: reading a view allocates what the
// view holds, not the record it is read through (an attached console
// reads every change so; that record on the heap was a third of what a
// change allocated, BENCHMARKS.md, helper decode).
func TestReadViewAllocatesOnlyTheView(t *testing.T) {
	v := view.Container{State: view.Queued, Priority: 2, RuntimeConstraints: view.Constraints{VCPUs: 1, RAM: 1 << 30},
		ContainerBody: view.ContainerBody{MaxAttempts: 3, CreatedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)},
		ContainerTail: view.ContainerTail{Seq: 5}}
	j, err := AppendViewJSON(nil, &v)
	if err != nil {
		t.Fatal(err)
	}
	var got view.Container
	if !ReadView(j, &got) {
		t.Fatalf("ReadView refused %s", j)
	}
	// Nothing in v needs memory of its own: no string, list or map.
	if n := testing.AllocsPerRun(100, func() { ReadView(j, &got) }); n != 0 {
		t.Errorf("ReadView of a view holding no strings allocated %v times, want 0:\n%s", n, j)
	}
}
