package queue

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"dispatch-tui/engine/runner"
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
		{"queued", Container{State: Queued, Priority: 3, ID: "c-0123", Name: "job", Command: []string{"true"},
			RuntimeConstraints: Constraints{VCPUs: 4, RAM: 6 << 30, Scratch: 1, GPUs: 1},
			FirstSeenAt:        t0, CreatedAt: t0, Seq: 42, MaxAttempts: 3, RestartPolicy: RestartNever,
			Scheduling: Scheduling{Preemptible: boolp(false), MaxRunTime: Duration(90 * time.Second)}}},
		{"finished", Container{State: Complete, Priority: -1, Held: true, ID: "c-1", Command: []string{},
			ExitCode: &code, Attempts: 2, InstanceType: "small", InstanceID: "i-1",
			CreatedAt: t0, LockedAt: t0.Add(time.Second), StartedAt: t0.In(plus2), FinishedAt: t0.Add(time.Hour),
			Reason: "exit 137", ReasonCode: ReasonKilled, KillRequested: true, RunnerSeen: true,
			KillReason: "operator", LogsError: "instance gone", Seq: 1 << 63,
			Scheduling: Scheduling{Preemptible: boolp(true), MaxRunTime: Duration(-time.Microsecond), Supervisor: true,
				Labels: map[string]string{"zone": "b", "gpu": "a100", "<&>": "\u2028"}}}},
		{"escapes", Container{ID: "c\"\\x", Name: "héllo <b>&</b>\n\t\x01", Image: "img:latest",
			Command: []string{"sh", "-c", "echo \"$X\" > /dev/null; printf '\\u2029\u2029'", "\xff\xfe"},
			Env:     map[string]string{"B": "2", "A": "1", "Ω": "\x7f"}, Reason: "bad utf8 \xc3"}},
		{"health", Container{ID: "c-h", Command: []string{"x"},
			HealthCheck: &HealthCheck{Command: []string{"curl", "-f", "localhost"}, Interval: Duration(10 * time.Second), Retries: 3},
			Health:      &runner.Health{State: "healthy", Failures: 1, LastCheck: t0, LastResult: "ok"}}},
		{"far years", Container{FirstSeenAt: time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC), CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"year 1", Container{CreatedAt: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)}},
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
		c := Container{State: States[rng.IntN(len(States))], Priority: rng.IntN(10) - 2, Held: rng.IntN(2) == 0,
			RuntimeConstraints: Constraints{VCPUs: rng.IntN(64), RAM: rng.Int64(), Scratch: -rng.Int64N(9), GPUs: rng.IntN(3)},
			FirstSeenAt:        tm(), ID: str(), Name: str(), Image: str(), CreatedAt: tm(), LockedAt: tm(), StartedAt: tm(), FinishedAt: tm(),
			Attempts: rng.IntN(4), MaxAttempts: rng.IntN(4), RestartPolicy: str(), InstanceType: str(), InstanceID: str(),
			Reason: str(), ReasonCode: ReasonCode(str()), KillRequested: rng.IntN(2) == 0, RunnerSeen: rng.IntN(2) == 0,
			KillReason: str(), LogsError: str(), Seq: rng.Uint64(),
			Scheduling: Scheduling{MaxRunTime: Duration(rng.Int64N(1e13) - 1e12), Supervisor: rng.IntN(2) == 0}}
		for range rng.IntN(3) {
			c.Command = append(c.Command, str())
		}
		if rng.IntN(3) == 0 {
			c.Env = map[string]string{str(): str(), str(): str()}
		}
		if rng.IntN(3) == 0 {
			c.Scheduling.Labels = map[string]string{str(): str()}
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
			Scheduling: Scheduling{Labels: map[string]string{"zone": "b"}, Supervisor: true}},
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
	for _, c := range e.q.byID {
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

	db, err := bolt.Open(e.opts.Path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		n := 0
		err := tx.Bucket(bucketContainers).ForEach(func(k, v []byte) error {
			n++
			if w := want[binary.BigEndian.Uint64(k)]; !bytes.Equal(v, w) {
				t.Errorf("record %x in the file:\n got %s\nwant %s", k, v, w)
			}
			return nil
		})
		if n != len(want) {
			t.Errorf("%d records in the file, want %d", n, len(want))
		}
		stored := storedEvents(t, tx)
		for _, ev := range stored {
			if w := wantEvents[ev.seq]; !bytes.Equal(ev.json, w) {
				t.Errorf("event %d in the file:\n got %s\nwant %s", ev.seq, ev.json, w)
			}
		}
		if len(stored) != len(wantEvents) {
			t.Errorf("%d events in the file, want %d", len(stored), len(wantEvents))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
