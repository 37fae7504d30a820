package queue

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
)

// The hand-made encoders must write exactly what json.Marshal writes, so
// that the store's format is unchanged and any record reads back the same.
func TestAppendContainerMatchesMarshal(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 891011, time.UTC)
	plus2 := time.FixedZone("", 2*3600)
	code := 137
	tests := []struct {
		name string
		c    Container
	}{
		{"zero", Container{}},
		{"queued", Container{
			State:    Queued,
			Priority: 3,
			ContainerBody: view.ContainerBody{
				ID:            "c-0123",
				Name:          "job",
				Command:       []string{"true"},
				CreatedAt:     t0,
				MaxAttempts:   3,
				RestartPolicy: RestartNever,
				Scheduling:    Scheduling{Preemptible: boolp(false), MaxRunTime: Duration(90 * time.Second)},
			},
			RuntimeConstraints: Constraints{VCPUs: 4, RAM: 6 << 30, Scratch: 1, GPUs: 1},
			FirstSeenAt:        t0,
			ContainerTail: view.ContainerTail{
				Seq: 42,
			},
		}},
		{"finished", Container{
			State:    Complete,
			Priority: -1,
			Held:     true,
			ContainerBody: view.ContainerBody{
				ID:           "c-1",
				Command:      []string{},
				ExitCode:     &code,
				Attempts:     2,
				InstanceType: "small",
				InstanceID:   "i-1",
				CreatedAt:    t0,
				LockedAt:     t0.Add(time.Second),
				StartedAt:    t0.In(plus2),
				FinishedAt:   t0.Add(time.Hour),
				Reason:       "exit 137",
				ReasonCode:   ReasonKilled,
				Scheduling: Scheduling{Preemptible: boolp(true), MaxRunTime: Duration(-time.Microsecond), Supervisor: true,
					Constraints: map[string]string{"zone": "b", "gpu": "a100", "<&>": "\u2028"}},
				Labels: map[string]string{"team": "x", "<&>": "\u2028"},
			},
			KillRequested: true,
			RunnerSeen:    true,
			ContainerTail: view.ContainerTail{
				KillReason: "operator",
				LogsError:  "instance gone",
				Seq:        1 << 63,
			},
			LogsTruncated: math.MaxUint32,
		}},
		{"escapes", Container{
			ContainerBody: view.ContainerBody{
				ID:      "c\"\\x",
				Name:    "héllo <b>&</b>\n\t\x01",
				Image:   "img:latest",
				Command: []string{"sh", "-c", "echo \"$X\" > /dev/null; printf '\\u2029\u2029'", "\xff\xfe"},
				Env:     map[string]string{"B": "2", "A": "1", "Ω": "\x7f"},
				Reason:  "bad utf8 \xc3",
			},
		}},
		{"health", Container{
			ContainerBody: view.ContainerBody{
				ID:      "c-h",
				Command: []string{"x"},
			},
			ContainerTail: view.ContainerTail{
				HealthCheck: &HealthCheck{Command: []string{"curl", "-f", "localhost"}, Interval: Duration(10 * time.Second), Retries: 3},
				Health:      &runner.Health{State: "healthy", Failures: 1, LastCheck: t0, LastResult: "ok"},
			},
		}},
		{"far years", Container{FirstSeenAt: time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC), ContainerBody: view.ContainerBody{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}},
		{"year 1", Container{ContainerBody: view.ContainerBody{CreatedAt: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The stored form is the JSON of the record without Health,
			// which is kept in memory only.
			stored := tt.c
			stored.Health = nil
			want, wantErr := json.Marshal(&stored)
			got, gotErr := appendContainer([]byte("prefix"), &tt.c)
			if (wantErr != nil) != (gotErr != nil) {
				t.Fatalf("error %v, json.Marshal's %v", gotErr, wantErr)
			}
			if wantErr != nil {
				return
			}
			if !bytes.Equal(got, append([]byte("prefix"), want...)) {
				t.Fatalf("appendContainer:\n got %s\nwant prefix%s", got, want)
			}
		})
	}
}

func TestAppendContainerMatchesMarshalRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	alphabet := []string{"a", "Z", "0", " ", "\"", "\\", "<", ">", "&", "é", "\n", "\x00", "\u2028", "\xff", "-", "_"}
	str := func() string {
		var sb strings.Builder
		for range rng.IntN(8) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return sb.String()
	}
	tm := func() time.Time {
		if rng.IntN(4) == 0 {
			return time.Time{}
		}
		return time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(time.FixedZone("", (rng.IntN(48)-24)*1800))
	}
	for i := range 2000 {
		c := Container{
			State:              States[rng.IntN(len(States))],
			Priority:           rng.IntN(10) - 2,
			Held:               rng.IntN(2) == 0,
			RuntimeConstraints: Constraints{VCPUs: rng.IntN(64), RAM: rng.Int64(), Scratch: -rng.Int64N(9), GPUs: rng.IntN(3)},
			FirstSeenAt:        tm(),
			ContainerBody: view.ContainerBody{
				ID:            str(),
				Name:          str(),
				Image:         str(),
				CreatedAt:     tm(),
				LockedAt:      tm(),
				StartedAt:     tm(),
				FinishedAt:    tm(),
				Attempts:      rng.IntN(4),
				MaxAttempts:   rng.IntN(4),
				RestartPolicy: str(),
				InstanceType:  str(),
				InstanceID:    str(),
				Reason:        str(),
				ReasonCode:    ReasonCode(str()),
				Scheduling:    Scheduling{MaxRunTime: Duration(rng.Int64N(1e13) - 1e12), Supervisor: rng.IntN(2) == 0},
			},
			KillRequested: rng.IntN(2) == 0,
			RunnerSeen:    rng.IntN(2) == 0,
			ContainerTail: view.ContainerTail{
				KillReason: str(),
				LogsError:  str(),
				Seq:        rng.Uint64(),
			},
			LogsTruncated: TruncatedOutput(rng.Uint32() >> rng.IntN(32)),
		}
		for range rng.IntN(3) {
			c.Command = append(c.Command, str())
		}
		if rng.IntN(3) == 0 {
			c.Env = map[string]string{str(): str(), str(): str()}
		}
		if rng.IntN(3) == 0 {
			c.Scheduling.Constraints = map[string]string{str(): str()}
		}
		if rng.IntN(3) == 0 {
			c.Labels = map[string]string{str(): str()}
		}
		if rng.IntN(3) > 0 {
			c.Scheduling.Preemptible = boolp(rng.IntN(2) == 0)
		}
		if rng.IntN(3) == 0 {
			n := rng.IntN(300) - 10
			c.ExitCode = &n
		}
		want, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendContainer(nil, &c)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("container %d:\n got %s\nwant %s", i, got, want)
		}
		e := Event{Seq: rng.Uint64(), Time: tm(), Actor: str(), Kind: str(), Target: str(), Action: str(), Reason: str()}
		want, err = json.Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		got, err = appendEvent(nil, &e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("event %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// What a pass changed is in the bbolt file, in json.Marshal's encoding,
// when the pass's flush returns: read back from the file itself (the queue
// closed, without its flush-on-close having anything left to write).
func TestFlushWritesMarshalEncodingToFile(t *testing.T) {
	e := newEnv(t, nil)
	var ids []string
	for i, s := range []Spec{
		spec("true"),
		{Command: []string{"sh", "-c", "echo <&>"}, Env: map[string]string{"B": "2", "A": "é"}, Image: "img",
			Scheduling: Scheduling{Constraints: map[string]string{"zone": "b"}, Supervisor: true}},
		{Command: []string{"x"}, HealthCheck: &HealthCheck{Command: []string{"check"}}},
		spec("false"),
	} {
		s.Name = "c" + string(rune('0'+i))
		ids = append(ids, e.submit(s).ID)
	}
	e.pass(func(tx *Tx) {
		for i, id := range ids[:3] {
			c := tx.Get(id)
			if err := tx.Lock(c, "small"); err != nil {
				t.Fatal(err)
			}
			if i > 0 {
				if err := tx.Run(c, "i-1", "small"); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := tx.Finish(tx.Get(ids[2]), 3, tx.Now()); err != nil {
			t.Fatal(err)
		}
	})
	// The pass's flush has returned: nothing may be left for Close.
	e.q.mu.Lock()
	if len(e.q.dirty) != 0 || len(e.q.newEvents) != 0 {
		t.Errorf("after the pass: %d records and %d events not written", len(e.q.dirty), len(e.q.newEvents))
	}
	want := map[uint64][]byte{}
	for c := range e.q.byID.all() {
		j, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		want[c.Seq] = j
	}
	wantEvents := map[uint64][]byte{}
	for _, ev := range e.q.recent {
		j, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		wantEvents[ev.Seq] = j
	}
	e.q.mu.Unlock()
	e.close()

	h := e.held()
	for seq, v := range h.records {
		if w := want[seq]; !bytes.Equal(v, w) {
			t.Errorf("record %d in the file:\n got %s\nwant %s", seq, v, w)
		}
	}
	if len(h.records) != len(want) {
		t.Errorf("%d records in the file, want %d", len(h.records), len(want))
	}
	for _, ev := range h.events {
		if w := wantEvents[ev.seq]; !bytes.Equal(ev.json, w) {
			t.Errorf("event %d in the file:\n got %s\nwant %s", ev.seq, ev.json, w)
		}
	}
	if len(h.events) != len(wantEvents) {
		t.Errorf("%d events in the file, want %d", len(h.events), len(wantEvents))
	}
}

// checkContainer fails t unless appendContainer writes what json.Marshal
// writes (Health left out), errors included. (The encoder before the
// hand-written appenders was itself held to json.Marshal, so this keeps
// the stored format.)
func checkContainer(t *testing.T, c *Container) {
	t.Helper()
	got, gotErr := appendContainer([]byte("pre"), c)
	stored := *c
	stored.Health = nil
	want, wantErr := json.Marshal(&stored)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("error %v, json.Marshal's %v; container %#v", gotErr, wantErr, c)
	}
	if gotErr != nil {
		return
	}
	if !bytes.Equal(got[len("pre"):], want) {
		t.Fatalf("appendContainer:\n got %s\njson %s", got, want)
	}
	checkView(t, c.view(Pending{}))
}

// checkView checks that AppendViewJSON writes v as json.Marshal does, and
// fails where it fails.
func checkView(t *testing.T, v view.Container) {
	t.Helper()
	got, gotErr := AppendViewJSON([]byte("pre"), &v)
	want, wantErr := json.Marshal(&v)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("AppendViewJSON: error %v, json.Marshal's %v; view %#v", gotErr, wantErr, v)
	}
	if gotErr == nil && !bytes.Equal(got[len("pre"):], want) {
		t.Fatalf("AppendViewJSON:\n got %s\njson %s", got, want)
	}
}

// TestAppendViewJSONEveryField sets every field of a view, found by
// reflection, to a value that is not its zero and not omitted: a field
// added to view.Container and not to the encoder fails here.
func TestAppendViewJSONEveryField(t *testing.T) {
	var v view.Container
	fillEveryField(t, reflect.ValueOf(&v).Elem(), "view.Container")
	checkView(t, v)
	// And with each pointer, map and slice back to nil (null or omitted).
	r := randomRecords{rand.New(rand.NewPCG(7, 32))}
	for range 200 {
		fillEveryField(t, reflect.ValueOf(&v).Elem(), "view.Container")
		nilSome(r.rng, reflect.ValueOf(&v).Elem())
		checkView(t, v)
	}
}

// fillEveryField sets each field under f (a settable value named name)
// to something encoding/json writes.
func fillEveryField(t *testing.T, f reflect.Value, name string) {
	t.Helper()
	if f.Type() == reflect.TypeFor[time.Time]() {
		f.Set(reflect.ValueOf(time.Date(2026, 11, 29, 8, 30, 1, 500, time.UTC)))
		return
	}
	switch f.Kind() {
	case reflect.Struct:
		for i := range f.NumField() {
			if sf := f.Type().Field(i); sf.IsExported() {
				fillEveryField(t, f.Field(i), name+"."+sf.Name)
			}
		}
	case reflect.String:
		f.SetString("<" + name + "> é\u2028")
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f.SetInt(-int64(len(name)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f.SetUint(uint64(len(name)))
	case reflect.Pointer:
		f.Set(reflect.New(f.Type().Elem()))
		fillEveryField(t, f.Elem(), name)
	case reflect.Slice:
		f.Set(reflect.MakeSlice(f.Type(), 2, 2))
		for i := range 2 {
			fillEveryField(t, f.Index(i), name+"["+strconv.Itoa(i)+"]")
		}
	case reflect.Map:
		m := reflect.MakeMap(f.Type())
		for i := range 3 {
			k, e := reflect.New(f.Type().Key()).Elem(), reflect.New(f.Type().Elem()).Elem()
			fillEveryField(t, k, name+" key "+strconv.Itoa(i))
			fillEveryField(t, e, name+" value "+strconv.Itoa(i))
			m.SetMapIndex(k, e)
		}
		f.Set(m)
	default:
		t.Fatalf("%s: a %s; the test does not fill one (and AppendViewJSON may not write one)", name, f.Kind())
	}
}

// nilSome sets some of the pointers, maps and slices under f to nil.
func nilSome(rng *rand.Rand, f reflect.Value) {
	switch f.Kind() {
	case reflect.Struct:
		if f.Type() != reflect.TypeFor[time.Time]() {
			for i := range f.NumField() {
				if f.Type().Field(i).IsExported() {
					nilSome(rng, f.Field(i))
				}
			}
		}
	case reflect.Pointer, reflect.Map, reflect.Slice:
		if rng.IntN(2) == 0 {
			f.Set(reflect.Zero(f.Type()))
		} else if f.Kind() == reflect.Pointer {
			nilSome(rng, f.Elem())
		}
	}
}

// checkEvent is checkContainer for events.
func checkEvent(t *testing.T, e *Event) {
	t.Helper()
	got, gotErr := appendEvent([]byte("pre"), e)
	want, wantErr := json.Marshal(e)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("error %v, json.Marshal's %v; event %#v", gotErr, wantErr, e)
	}
	if gotErr != nil {
		return
	}
	if !bytes.Equal(got[len("pre"):], want) {
		t.Fatalf("appendEvent:\n got %s\njson %s", got, want)
	}
}

// edgeStrings are strings each escape rule of encoding/json meets.
var edgeStrings = []string{
	"", "a", "c-0123456789abcdef", "\"", "\\", "<", ">", "&", "<script>&amp;</script>",
	"\x00", "\x01\x1f", "\b\f\n\r\t", "\x7f", " ~", "é", "Ωmega", "日本語", "🙂", "\u2027\u2028\u2029\u202a",
	"\xff", "\xc3", "a\xc3(", "\xe2\x80", "\xe2\x80\xa8", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf0\x9f\x99",
	"mixed \"quote\" and \\ back\\slash, <tag> & é\u2028\xfe end", strings.Repeat("x", 300) + "\n",
}

// edgeTimes are times at the edges of what MarshalJSON writes or refuses.
func edgeTimes() []time.Time {
	ts := []time.Time{
		{}, time.Unix(0, 0).UTC(), time.Unix(0, 1).UTC(), time.Unix(-1, 999999999).UTC(),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 2, 29, 23, 59, 59, 999999999, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1900, 3, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 2, 29, 12, 0, 0, 100, time.UTC), time.Date(2100, 2, 28, 12, 0, 0, 120000000, time.UTC),
		time.Date(2026, 11, 25, 13, 24, 5, 123456789, time.UTC), time.Date(2026, 11, 25, 13, 24, 5, 123456789, time.Local),
		time.Unix(1<<40, 5), time.Unix(-1<<40, 5), time.Unix(1<<62, 0), time.Unix(-1<<62, 0),
	}
	var zoned []time.Time
	for _, off := range []int{1, -1, 30, -30, 59, 60, -60, 5*3600 + 45*60, -(9*3600 + 30*60), 24*3600 - 1, -(24*3600 - 1), 24 * 3600, -24 * 3600, 25 * 3600} {
		z := time.FixedZone("z", off)
		for _, t := range ts[4:12] {
			zoned = append(zoned, t.In(z))
		}
		zoned = append(zoned, time.Date(0, 1, 1, 0, 0, 0, 0, z), time.Date(9999, 12, 31, 23, 59, 59, 0, z))
	}
	if ny, err := time.LoadLocation("America/New_York"); err == nil {
		zoned = append(zoned, time.Date(2026, 3, 8, 1, 59, 59, 0, ny), time.Date(2026, 3, 8, 3, 0, 0, 0, ny))
	}
	return append(ts, zoned...)
}

// edgeDurations are durations each unit of Duration.String meets.
var edgeDurations = []time.Duration{
	0, 1, -1, 999, 1000, 1001, 1500, 999999, 1000000, 1000001, 1500000, 999999999, time.Second, -time.Second,
	time.Second + 1, 59 * time.Second, time.Minute, time.Minute + 500*time.Millisecond, time.Hour, 90 * time.Minute,
	100*time.Hour + time.Nanosecond, math.MaxInt64, math.MinInt64, math.MinInt64 + 1, -time.Microsecond,
}

func TestAppendMatchesMarshalEdges(t *testing.T) {
	cs := edgeContainers()
	for i := range cs {
		checkContainer(t, &cs[i])
	}
	for _, s := range edgeStrings {
		checkEvent(t, &Event{Actor: s, Kind: s, Target: s, Action: s, Reason: s})
	}
	for _, tm := range edgeTimes() {
		checkEvent(t, &Event{Seq: 1, Time: tm})
	}
}

// edgeContainers are records with each field at the edges of what it
// holds: edgeStrings, edgeTimes, edgeDurations, extreme numbers, nil,
// empty and large maps and slices.
func edgeContainers() []Container {
	var cs []Container
	for _, s := range edgeStrings {
		cs = append(cs,
			Container{
				ContainerBody: view.ContainerBody{
					ID:            s,
					Name:          s,
					Command:       []string{s, "x"},
					Image:         s,
					RestartPolicy: s,
					InstanceType:  s,
					InstanceID:    s,
					Reason:        s,
					ReasonCode:    ReasonCode(s),
				},
				ContainerTail: view.ContainerTail{
					KillReason: s,
					LogsError:  s,
				},
				State: State(s),
			},
			Container{ContainerBody: view.ContainerBody{Env: map[string]string{s: s, "k": s, s + "2": ""}, Scheduling: Scheduling{Constraints: map[string]string{s: s}}}})
	}
	for _, tm := range edgeTimes() {
		cs = append(cs, Container{FirstSeenAt: tm, ContainerBody: view.ContainerBody{CreatedAt: tm, LockedAt: tm, StartedAt: tm, FinishedAt: tm}})
	}
	for _, d := range edgeDurations {
		cs = append(cs, Container{ContainerBody: view.ContainerBody{Scheduling: Scheduling{MaxRunTime: Duration(d)}}})
	}
	zero, minus := 0, -1
	big := make(map[string]string)
	for i := range 40 {
		big[string(rune('a'+i%26))+strconv.Itoa(i)] = strconv.Itoa(i)
	}
	cs = append(cs,
		Container{ContainerBody: view.ContainerBody{Command: []string{}, Env: map[string]string{}, Scheduling: Scheduling{Constraints: map[string]string{}}}},
		Container{ContainerBody: view.ContainerBody{Command: []string{""}, Env: big, Scheduling: Scheduling{Constraints: big}}},
		Container{ContainerBody: view.ContainerBody{ExitCode: &zero, Scheduling: Scheduling{Preemptible: boolp(false)}}},
		Container{ContainerBody: view.ContainerBody{ExitCode: &minus, Scheduling: Scheduling{Preemptible: boolp(true)}}},
		Container{
			Priority: math.MinInt,
			ContainerBody: view.ContainerBody{
				Attempts:    math.MaxInt,
				MaxAttempts: math.MinInt,
			},
			ContainerTail: view.ContainerTail{
				Seq: math.MaxUint64,
			},
			RuntimeConstraints: Constraints{VCPUs: math.MaxInt, RAM: math.MinInt64, Scratch: math.MaxInt64, GPUs: -1},
		},
		Container{ContainerTail: view.ContainerTail{HealthCheck: &HealthCheck{Command: []string{"<&>", "\u2028"}}, Health: &runner.Health{State: "x"}}},
	)
	return cs
}

// randomRecords makes records of every kind from rng: strings of bytes
// that need escaping and runes of every width, times anywhere in (and just
// out of) the years MarshalJSON writes in any offset, nil and empty maps
// and slices, nil and set pointers.
type randomRecords struct{ rng *rand.Rand }

func (r randomRecords) str() string {
	var sb strings.Builder
	for range r.rng.IntN(12) {
		switch r.rng.IntN(6) {
		case 0:
			sb.WriteByte(byte(r.rng.IntN(256)))
		case 1:
			sb.WriteRune(rune(r.rng.IntN(0x110000)))
		case 2:
			sb.WriteString(edgeStrings[r.rng.IntN(len(edgeStrings))])
		default:
			sb.WriteByte(byte(' ' + r.rng.IntN(95)))
		}
	}
	return sb.String()
}

func (r randomRecords) time() time.Time {
	var t time.Time
	switch r.rng.IntN(5) {
	case 0:
		return t
	case 1: // near now
		t = time.Unix(1.7e9+r.rng.Int64N(1e8), r.rng.Int64N(1e9))
	case 2: // anywhere from before year 0 to after 9999
		t = time.Unix(r.rng.Int64N(3.2e11)-6.3e10, r.rng.Int64N(1e9))
	case 3: // a whole number of some unit
		t = time.Unix(r.rng.Int64N(4e9), []int64{0, 1e8, 1e6, 1e3, 10}[r.rng.IntN(5)]*r.rng.Int64N(10))
	default:
		t = time.Unix(r.rng.Int64(), r.rng.Int64N(1e9))
	}
	switch r.rng.IntN(4) {
	case 0:
		return t.In(time.FixedZone("", r.rng.IntN(2*26*3600)-26*3600))
	case 1:
		return t.Local()
	}
	return t.UTC()
}

func (r randomRecords) strMap() map[string]string {
	switch r.rng.IntN(3) {
	case 0:
		return nil
	case 1:
		return map[string]string{}
	}
	m := map[string]string{}
	for range 1 + r.rng.IntN(20) {
		m[r.str()] = r.str()
	}
	return m
}

func (r randomRecords) container() Container {
	rng := r.rng
	c := Container{
		State:              States[rng.IntN(len(States))],
		Priority:           rng.IntN(10) - 2,
		Held:               rng.IntN(2) == 0,
		RuntimeConstraints: Constraints{VCPUs: int(rng.Int64()), RAM: rng.Int64() - rng.Int64(), Scratch: -rng.Int64N(9), GPUs: rng.IntN(3)},
		FirstSeenAt:        r.time(),
		ContainerBody: view.ContainerBody{
			ID:            r.str(),
			Name:          r.str(),
			Image:         r.str(),
			CreatedAt:     r.time(),
			LockedAt:      r.time(),
			StartedAt:     r.time(),
			FinishedAt:    r.time(),
			Attempts:      rng.IntN(4),
			MaxAttempts:   rng.IntN(4),
			RestartPolicy: r.str(),
			InstanceType:  r.str(),
			InstanceID:    r.str(),
			Reason:        r.str(),
			ReasonCode:    ReasonCode(r.str()),
			Env:           r.strMap(),
			Labels:        r.strMap(),
			Scheduling:    Scheduling{Constraints: r.strMap(), Supervisor: rng.IntN(2) == 0},
		},
		KillRequested: rng.IntN(2) == 0,
		RunnerSeen:    rng.IntN(2) == 0,
		ContainerTail: view.ContainerTail{
			KillReason: r.str(),
			LogsError:  r.str(),
			Seq:        rng.Uint64() >> rng.IntN(64),
		},
		LogsTruncated: TruncatedOutput(rng.Uint32() >> rng.IntN(32)),
	}
	switch rng.IntN(4) {
	case 0:
		c.Scheduling.MaxRunTime = Duration(rng.Int64() - rng.Int64())
	case 1:
		c.Scheduling.MaxRunTime = Duration(edgeDurations[rng.IntN(len(edgeDurations))])
	case 2:
		c.Scheduling.MaxRunTime = Duration(rng.Int64N(int64(1000 * time.Hour)))
	}
	if rng.IntN(4) > 0 {
		c.Command = []string{}
		for range rng.IntN(4) {
			c.Command = append(c.Command, r.str())
		}
	}
	if rng.IntN(3) > 0 {
		c.Scheduling.Preemptible = boolp(rng.IntN(2) == 0)
	}
	if rng.IntN(3) == 0 {
		n := int(rng.Int32()) >> rng.IntN(32)
		c.ExitCode = &n
	}
	if rng.IntN(10) == 0 {
		c.HealthCheck = &HealthCheck{Command: []string{r.str()}, Interval: Duration(rng.Int64N(1e11)), Retries: rng.IntN(5)}
	}
	return c
}

func TestAppendMatchesMarshalRandom(t *testing.T) {
	r := randomRecords{rand.New(rand.NewPCG(2026, 17))}
	for range 5000 {
		c := r.container()
		if r.rng.IntN(10) == 0 { // in memory only: checkContainer checks it in the view
			c.Health = &runner.Health{State: r.str(), Failures: r.rng.IntN(3), LastCheck: r.time(), LastResult: r.str(),
				LastOutput: r.str(), Killed: r.rng.IntN(2) == 0}
		}
		checkContainer(t, &c)
		e := Event{Seq: r.rng.Uint64(), Time: r.time(), Actor: r.str(), Kind: r.str(), Target: r.str(), Action: r.str()}
		if r.rng.IntN(2) == 0 {
			e.Reason = r.str()
		}
		checkEvent(t, &e)
	}
}

// The parts on their own, over more values than whole records reach.
func TestAppendJSONPartsMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	r := randomRecords{rng}
	var tt timeText // one for all: what it remembers must not leak into the next time
	var prev time.Time
	for range 50000 {
		tm := r.time()
		switch rng.IntN(6) {
		case 0: // the same instant, or in another zone
			tm = prev.In([]*time.Location{time.UTC, time.FixedZone("", 3600), prev.Location()}[rng.IntN(3)])
		case 1: // the same day, or the same second
			tm = prev.Add(time.Duration(rng.Int64N(int64(time.Minute))) >> rng.IntN(30))
		case 2: // the same wall clock in another zone
			tm = time.Date(prev.Year(), prev.Month(), prev.Day(), prev.Hour(), prev.Minute(), prev.Second(), prev.Nanosecond(),
				[]*time.Location{time.UTC, time.FixedZone("", -1800)}[rng.IntN(2)])
		}
		prev = tm
		want, wantErr := tm.MarshalJSON()
		got, gotErr := tt.append(nil, tm)
		if (wantErr != nil) != (gotErr != nil) || wantErr == nil && !bytes.Equal(got, want) {
			t.Fatalf("time %v (%d s, %d ns): got %s %v, MarshalJSON %s %v", tm, tm.Unix(), tm.Nanosecond(), got, gotErr, want, wantErr)
		}
		d := time.Duration(rng.Int64() >> rng.IntN(64))
		if rng.IntN(2) == 0 {
			d = -d
		}
		if got, want := appendJSONDuration(nil, d), mustMarshal(t, Duration(d)); !bytes.Equal(got, want) {
			t.Fatalf("duration %d: got %s, want %s", int64(d), got, want)
		}
		n := rng.Int64() >> rng.IntN(64)
		if rng.IntN(2) == 0 {
			n = -n
		}
		if got, want := appendInt(nil, n), strconv.AppendInt(nil, n, 10); !bytes.Equal(got, want) {
			t.Fatalf("int %d: got %s", n, got)
		}
		if u := rng.Uint64() >> rng.IntN(64); !bytes.Equal(appendUint(nil, u), strconv.AppendUint(nil, u, 10)) {
			t.Fatalf("uint %d: got %s", u, appendUint(nil, u))
		}
		s := r.str()
		if got, want := appendJSONString(nil, s), mustMarshal(t, s); !bytes.Equal(got, want) {
			t.Fatalf("string %q: got %s, want %s", s, got, want)
		}
	}
	for _, n := range []int64{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 1e9, 1e18 - 1, 1e18, math.MaxInt64, math.MinInt64, math.MinInt64 + 1} {
		for _, n := range []int64{n, -n} {
			if got, want := appendInt(nil, n), strconv.AppendInt(nil, n, 10); !bytes.Equal(got, want) {
				t.Fatalf("int %d: got %s", n, got)
			}
		}
		for _, u := range []uint64{uint64(n), math.MaxUint64, math.MaxUint64 - 1, 1e19, 1e19 - 1} {
			if !bytes.Equal(appendUint(nil, u), strconv.AppendUint(nil, u, 10)) {
				t.Fatalf("uint %d: got %s", u, appendUint(nil, u))
			}
		}
	}
	for _, d := range edgeDurations {
		if got, want := appendJSONDuration(nil, d), mustMarshal(t, Duration(d)); !bytes.Equal(got, want) {
			t.Fatalf("duration %d: got %s, want %s", int64(d), got, want)
		}
	}
	// Every byte at every place of the first eight-byte words (read
	// whole) and of the tail, among neighbours at the edges of the ranges
	// the words are tested for.
	for _, fill := range []byte{'a', ' ', '!', '~', 0x7f, '=', '?', '[', ']', '%', '\''} {
		for c := range 256 {
			for at := range 19 {
				bs := bytes.Repeat([]byte{fill}, 19)
				bs[at] = byte(c)
				s := string(bs)
				if got, want := appendJSONString(nil, s), mustMarshal(t, s); !bytes.Equal(got, want) {
					t.Fatalf("string %q: got %s, want %s", s, got, want)
				}
			}
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// FuzzAppend compares the encoders with json.Marshal
// on records built from the fuzzer's values:
//
//	go test -run='^$' -fuzz=FuzzAppend -fuzztime=60s ./engine/queue/
func FuzzAppend(f *testing.F) {
	f.Add("c-0123456789abcdef", "Running", "é<&>\u2028\xff", int64(1.7e9), int64(123456789), 0, int64(0), int64(42), false)
	f.Add("", "", "\x00\"\\", int64(-62167219200), int64(0), 3600, int64(-1500), int64(-1), true)
	f.Add("x", "\t", "", int64(253402300799), int64(999999999), -86399, int64(math.MinInt64), int64(1<<63-1), true)
	f.Fuzz(func(t *testing.T, s1, s2, s3 string, sec, nsec int64, off int, d, n int64, flag bool) {
		tm := time.Unix(sec, nsec).In(time.FixedZone("", off))
		if off == 0 && flag {
			tm = tm.UTC()
		}
		code := int(n)
		c := Container{
			State:    State(s2),
			Priority: int(n),
			Held:     flag,
			ContainerBody: view.ContainerBody{
				ID:         s1,
				Name:       s3,
				Image:      s2,
				Command:    []string{s1, s2, s3},
				Env:        map[string]string{s1: s2, s3: s1},
				CreatedAt:  tm.Add(time.Duration(d)),
				LockedAt:   tm,
				FinishedAt: tm.Add(-time.Duration(n)),
				Scheduling: Scheduling{Preemptible: &flag, MaxRunTime: Duration(d), Constraints: map[string]string{s3: s2}, Supervisor: flag},
				ExitCode:   &code,
				Reason:     s3,
				ReasonCode: ReasonCode(s1),
			},
			RuntimeConstraints: Constraints{VCPUs: int(n), RAM: n, Scratch: -n, GPUs: off},
			FirstSeenAt:        tm,
			ContainerTail: view.ContainerTail{
				KillReason: s2,
				Seq:        uint64(n),
			},
		}
		if flag {
			c.Command, c.Env, c.ExitCode = nil, nil, nil
		}
		checkContainer(t, &c)
		checkEvent(t, &Event{Seq: uint64(sec), Time: tm, Actor: s1, Kind: s2, Target: s3, Action: s1 + s2, Reason: s3})
		if got, want := appendJSONDuration(nil, time.Duration(n)), mustMarshal(t, Duration(n)); !bytes.Equal(got, want) {
			t.Fatalf("duration %d: got %s, want %s", n, got, want)
		}
	})
}
