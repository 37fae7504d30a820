package queue

import (
	"encoding/json"
	"testing"
	"time"

	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
)

func TestPendingText(t *testing.T) {
	tests := []struct {
		p    Pending
		want string
	}{
		{Pending{}, ""},
		{Pending{Code: ReasonNone, N: 3, Arg: "x"}, ""},
		{Pending{Code: ReasonPosition, N: 12}, "position 12 in queue"},
		{Pending{Code: ReasonQuota, N: 20}, "at quota (20 instances)"},
		{Pending{Code: ReasonQuota, N: 1}, "at quota (1 instance)"},
		{Pending{Code: ReasonBooting, Arg: "m-4"}, "waiting for m-4 to boot"},
		{Pending{Code: ReasonBooting}, "waiting for an instance to boot"},
		{Pending{Code: ReasonCreating, Arg: "c5.large"}, "waiting to create a c5.large instance"},
		{Pending{Code: ReasonCreating}, "waiting to create an instance"},
		{Pending{Code: ReasonCapacity, Arg: "c5.large, m5.large"}, "no capacity: c5.large, m5.large"},
		{Pending{Code: ReasonNoFit, Arg: "needs 64 GiB, largest is 32 GiB"}, "no instance type fits: needs 64 GiB, largest is 32 GiB"},
		{Pending{Code: ReasonHeld}, "held"},
		{Pending{Code: ReasonPaused}, "scheduler paused"},
		{Pending{Code: ReasonPriorityZero}, "priority 0 (not scheduled)"},
		{Pending{Code: ReasonStartup}, "waiting for instances to be probed after start-up"},
		{Pending{Code: ReasonRequeued, Arg: "i-7"}, "waiting for previous attempt on i-7 to end"},
		{Pending{Code: ReasonRequeued}, "waiting for its previous attempt to end"},
		{Pending{Code: ReasonKilled}, "KILLED"},
		{Pending{Code: ReasonKilled, Arg: "killed by operator"}, "killed by operator"},
		{Pending{Code: ReasonMaxAttempts}, "MAX_ATTEMPTS"},
		{Pending{Code: ReasonMaxAttempts, Arg: "gave up"}, "gave up"},
		{Pending{Code: ReasonCloudRefused}, "cloud refused creates"},
		{Pending{Code: ReasonCloudRefused, Arg: "cloud refused creates (not retried until 10:00:00): denied"}, "cloud refused creates (not retried until 10:00:00): denied"},
		{Pending{Code: "SOMETHING_NEW", Arg: ""}, "SOMETHING_NEW"},
	}
	for _, tt := range tests {
		if got := tt.p.Text(); got != tt.want {
			t.Errorf("%+v.Text() = %q, want %q", tt.p, got, tt.want)
		}
	}
	// Every declared code renders to something non-empty, except None.
	for _, code := range []ReasonCode{ReasonPosition, ReasonQuota, ReasonBooting, ReasonCreating, ReasonCapacity,
		ReasonNoFit, ReasonHeld, ReasonPaused, ReasonPriorityZero, ReasonStartup, ReasonRequeued,
		ReasonKilled, ReasonMaxAttempts, ReasonCloudRefused} {
		if (Pending{Code: code}).Text() == "" {
			t.Errorf("%s renders empty", code)
		}
	}
}

func fullContainer() *Container {
	exit := 3
	return &Container{
		ContainerBody: view.ContainerBody{
			ID:         "c-1",
			Name:       "n",
			Command:    []string{"a", "b"},
			Env:        map[string]string{"K": "v"},
			Scheduling: Scheduling{Constraints: map[string]string{"l": "1"}},
			ExitCode:   &exit,
		},
		State:              Queued,
		RuntimeConstraints: Constraints{VCPUs: 1},
	}
}

func TestViewCopies(t *testing.T) {
	c := fullContainer()
	v := c.view(Pending{})
	v.Command[0] = "changed"
	v.Env["K"] = "changed"
	v.Env["NEW"] = "x"
	v.Scheduling.Constraints["l"] = "changed"
	*v.ExitCode = 99
	wantEqual(t, "record", c, fullContainer())

	// The same through the queue: a Get copy does not reach the record.
	e := newEnv(t, nil)
	id := e.submit(Spec{Command: []string{"a"}, Env: map[string]string{"K": "v"},
		Scheduling: Scheduling{Constraints: map[string]string{"l": "1"}}}).ID
	e.toState(id, Complete)
	before := e.get(id)
	g := e.get(id)
	g.Command[0] = "changed"
	g.Env["K"] = "changed"
	g.Scheduling.Constraints["l"] = "changed"
	*g.ExitCode = 42
	wantEqual(t, "record via Get", e.get(id), before)
	var seen Container
	e.pass(func(tx *Tx) { seen = *tx.Get(id) })
	wantEqual(t, "record in a pass", seen.view(Pending{}), before)
}

func TestViewReason(t *testing.T) {
	tests := []struct {
		name       string
		state      State
		stored     string
		storedCode ReasonCode
		pending    Pending
		want       string
		wantCode   ReasonCode
	}{
		{"queued, no pending", Queued, "", ReasonNone, Pending{}, "", ReasonNone},
		{"queued, pending", Queued, "", ReasonNone, Pending{Code: ReasonHeld}, "held", ReasonHeld},
		{"requeued, pending wins", Queued, "died", ReasonRequeued, Pending{Code: ReasonPosition, N: 1}, "position 1 in queue", ReasonPosition},
		{"requeued, no pending", Queued, "died", ReasonRequeued, Pending{}, "died", ReasonRequeued},
		{"final keeps its stored reason", Cancelled, "killed", ReasonKilled, Pending{Code: ReasonHeld}, "killed", ReasonKilled},
	}
	for _, tt := range tests {
		c := &Container{State: tt.state, ContainerBody: view.ContainerBody{Reason: tt.stored, ReasonCode: tt.storedCode}}
		v := c.view(tt.pending)
		if v.Reason != tt.want || v.ReasonCode != tt.wantCode {
			t.Errorf("%s: %q %q, want %q %q", tt.name, v.Reason, v.ReasonCode, tt.want, tt.wantCode)
		}
		if c.Reason != tt.stored || c.ReasonCode != tt.storedCode {
			t.Errorf("%s: View changed the record", tt.name)
		}
	}
}

func TestDurationJSON(t *testing.T) {
	b, err := json.Marshal(Duration(90 * time.Second))
	if err != nil || string(b) != `"1m30s"` {
		t.Fatalf("marshal = %s, %v", b, err)
	}
	tests := []struct {
		in      string
		want    Duration
		wantErr bool
	}{
		{`"90s"`, Duration(90 * time.Second), false},
		{`"1h"`, Duration(time.Hour), false},
		{`1000`, Duration(1000), false},
		{`"soon"`, 0, true},
		{`true`, 0, true},
		{`1.5`, 0, true},
	}
	for _, tt := range tests {
		var d Duration
		err := json.Unmarshal([]byte(tt.in), &d)
		if (err != nil) != tt.wantErr || d != tt.want {
			t.Errorf("unmarshal %s = %v, %v; want %v, err %v", tt.in, time.Duration(d), err, time.Duration(tt.want), tt.wantErr)
		}
	}
}

// TestViewJSONIsTheRecords: the API sends what the record's JSON always
// was: a view's JSON is, byte for byte, that of its record (for one whose
// reason is its own, as a finished container's is).
func TestViewJSONIsTheRecords(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	code, pre := 3, true
	rec := Container{
		State:              Complete,
		Priority:           7,
		Held:               true,
		RuntimeConstraints: Constraints{VCPUs: 2, RAM: 1 << 30, Scratch: 2 << 30, GPUs: 1},
		FirstSeenAt:        t0,
		ContainerBody: view.ContainerBody{
			ID:      "c-0123456789abcdef",
			Name:    "n",
			Command: []string{"sh", "-c", "x"},
			Env:     map[string]string{"K": "v"},
			Image:   "img",
			Labels:  map[string]string{"team": "a"},
			Scheduling: Scheduling{Preemptible: &pre, MaxRunTime: Duration(90 * time.Second),
				Constraints: map[string]string{"gpu": "a100"}, Supervisor: true},
			ExitCode:      &code,
			Attempts:      2,
			MaxAttempts:   3,
			RestartPolicy: RestartOnFailure,
			InstanceType:  "small",
			InstanceID:    "i-1",
			CreatedAt:     t0,
			LockedAt:      t0.Add(time.Second),
			StartedAt:     t0.Add(2 * time.Second),
			FinishedAt:    t0.Add(3 * time.Second),
			Reason:        "r",
			ReasonCode:    ReasonKilled,
		},
		KillRequested: true,
		RunnerSeen:    true,
		LogsTruncated: TruncatedBytes(4096),
		ContainerTail: view.ContainerTail{
			KillReason:  "k",
			LogsError:   "e",
			Seq:         9,
			HealthCheck: &HealthCheck{Command: []string{"true"}, Interval: Duration(time.Minute), Retries: 2},
			Health:      &runner.Health{State: "healthy", LastCheck: t0, LastResult: "ok"},
		},
	}
	want, err := json.Marshal(&rec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(rec.view(Pending{}))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("view JSON\n %s\nrecord JSON\n %s", got, want)
	}
}
