package api

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
)

// checkItem fails t unless readItem decodes raw as json.Unmarshal does
// into a zero view (errors alike), and reports whether the view was read
// without reflection (queue.ReadView took it).
func checkItem(t *testing.T, raw []byte) (fast bool) {
	t.Helper()
	var want view.Container
	wantErr := json.Unmarshal(raw, &want)
	if at, ok := costAt(raw); ok {
		alone := append(append([]byte(nil), raw[:at]...), '}')
		var v view.Container
		fast = queue.ReadView(alone, &v)
	}
	var got view.Container
	err := readItem(append([]byte(nil), raw...), &got, nil)
	if (err != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("readItem of\n%s\n gave %#v, %v\njson.Unmarshal %#v, %v", raw, got, err, want, wantErr)
	}
	// With pairs: the same view without its maps, their entries in the
	// pairs.
	var bare view.Container
	var pairs queue.Pairs
	err = readItem(append([]byte(nil), raw...), &bare, &pairs)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("readItem with pairs of\n%s\n: %v, json.Unmarshal %v", raw, err, wantErr)
	}
	if err == nil {
		tags := string(pairs.AppendTags(nil))
		wantTags := tagsOf(want)
		want.Labels, want.Scheduling.Constraints = nil, nil
		if !reflect.DeepEqual(bare, want) || tags != wantTags {
			t.Fatalf("readItem with pairs of\n%s\n gave %#v, tags %q\nwant %#v, tags %q", raw, bare, tags, want, wantTags)
		}
	}
	return fast
}

// tagsOf is what Pairs.AppendTags gives for c's maps: "k=v" of each,
// sorted, joined by spaces.
func tagsOf(c view.Container) string {
	var parts []string
	for k, v := range c.Labels {
		parts = append(parts, k+"="+v)
	}
	for k, v := range c.Scheduling.Constraints {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// TestReadItemAsUnmarshal: the items a changes page holds, as the daemon
// writes them (appendItem), are read without reflection and decode as
// encoding/json decodes them; anything else goes to encoding/json.
func TestReadItemAsUnmarshal(t *testing.T) {
	views := sampleViews()
	for i := range views {
		for _, cost := range []float64{0, 0.25, 1e-7, 3e21} {
			raw, err := appendItem(nil, &views[i], cost)
			if err != nil {
				t.Fatal(err)
			}
			if !checkItem(t, raw) {
				t.Errorf("item %d (cost %g) was not read without reflection:\n%s", i, cost, raw)
			}
		}
	}
	// Items not as the daemon writes them: encoding/json's, whatever
	// they hold.
	for _, raw := range []string{
		`{"state":"Queued","cost":1}`,
		`{"cost":1}`,
		`{"state":"Queued","cost":"1"}`,
		`{"state":"Queued" , "cost" : 1 }`,
		`{"state":"Queued","labels":{"cost":1}}`,
		`{"cost":2,"state":"Queued","priority":4}`,
		`{"state":"Queued","priority":"x","cost":1}`,
		`{}`, `null`, `[]`, `"x"`, `1`,
	} {
		checkItem(t, []byte(raw))
	}
}

// sampleViews are containers as a changes page holds them: every kind of
// field, escapes and text beyond ASCII, a health.
func sampleViews() []view.Container {
	t0 := time.Date(2026, 11, 29, 9, 30, 0, 123456789, time.UTC)
	code, yes := 137, true
	return []view.Container{
		{State: view.Queued, Priority: 3, RuntimeConstraints: view.Constraints{VCPUs: 1, RAM: 1 << 30},
			FirstSeenAt: t0, ContainerBody: view.ContainerBody{ID: "c-1", Name: "q \u2028\"<&>\"", Command: []string{"true", "é\x01"},
				Labels: map[string]string{"team": "t1"}, MaxAttempts: 3, CreatedAt: t0, ReasonCode: view.ReasonQuota, Reason: "at quota"},
			ContainerTail: view.ContainerTail{Seq: 7}},
		{State: view.Running, Priority: 1, Held: true, RuntimeConstraints: view.Constraints{VCPUs: 8, RAM: 1 << 33, GPUs: 1},
			FirstSeenAt: t0, ContainerBody: view.ContainerBody{ID: "c-2", Command: []string{"sleep", "1"}, Env: map[string]string{"A": "b"},
				Image: "img", Scheduling: view.Scheduling{Preemptible: &yes, MaxRunTime: view.Duration(90 * time.Second)},
				Attempts: 1, MaxAttempts: 3, InstanceType: "small", InstanceID: "i-1", CreatedAt: t0, LockedAt: t0, StartedAt: t0.Add(time.Second)},
			KillRequested: true, RunnerSeen: true,
			ContainerTail: view.ContainerTail{Seq: 8, Health: &runner.Health{State: "healthy", Failures: 1, LastCheck: t0, LastResult: "ok"}}},
		{State: view.Complete, ContainerBody: view.ContainerBody{ID: "c-3", Command: []string{"false"}, ExitCode: &code,
			CreatedAt: t0, FinishedAt: t0.Add(time.Minute)}, LogsTruncated: 42,
			ContainerTail: view.ContainerTail{Seq: 9, KillReason: "operator", LogsError: "gone"}},
	}
}
