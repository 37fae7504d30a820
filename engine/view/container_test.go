package view

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"dispatch-tui/engine/runner"
)

// fullContainer is a view with every field set, so that each shows in
// its JSON.
func fullContainer() Container {
	t0 := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	code, pre := 3, true
	return Container{
		State:              Running,
		Priority:           7,
		Held:               true,
		RuntimeConstraints: Constraints{VCPUs: 2, RAM: 1 << 30, Scratch: 2 << 30, GPUs: 1},
		FirstSeenAt:        t0,
		ContainerBody: ContainerBody{
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
			RestartPolicy: "on-failure",
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
		LogsTruncated: 4096,
		ContainerTail: ContainerTail{
			KillReason:  "k",
			LogsError:   "e",
			Seq:         9,
			HealthCheck: &HealthCheck{Command: []string{"true"}, Interval: Duration(time.Minute), Timeout: Duration(time.Second), Retries: 2},
			Health:      &runner.Health{State: "healthy", Failures: 0, LastCheck: t0, LastResult: "ok"},
		},
	}
}

// TestContainerJSON: a view's JSON has the API's field names (those
// scripts and the CLI read; they are the names the API has always sent)
// and reads back as the same view. The pending reason is not sent: its
// text is reason.
func TestContainerJSON(t *testing.T) {
	c := fullContainer()
	c.Pending = Pending{Code: ReasonQuota, N: 2}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	want := []string{"attempts", "command", "created_at", "env", "exit_code", "finished_at", "first_seen_at",
		"health", "health_check", "held", "id", "image", "instance_id", "instance_type", "kill_reason",
		"kill_requested", "labels", "locked_at", "logs_error", "logs_truncated", "max_attempts", "name",
		"priority", "reason", "reason_code", "restart_policy", "runner_seen", "runtime_constraints",
		"scheduling", "seq", "started_at", "state"}
	var got []string
	for k := range fields {
		got = append(got, k)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("JSON fields\n got  %v\n want %v", got, want)
	}
	for field, want := range map[string]string{
		"runtime_constraints": `{"vcpus":2,"ram":1073741824,"scratch":2147483648,"gpus":1}`,
		"scheduling":          `{"preemptible":true,"max_run_time":"1m30s","constraints":{"gpu":"a100"},"supervisor":true}`,
		"logs_truncated":      `4096`,
		"health_check":        `{"command":["true"],"interval":"1m0s","timeout":"1s","retries":2}`,
		"state":               `"Running"`,
		"reason_code":         `"KILLED"`,
	} {
		if string(fields[field]) != want {
			t.Errorf("%s: %s, want %s", field, fields[field], want)
		}
	}
	var back Container
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	c.Pending = Pending{}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("read back\n got  %+v\n want %+v", back, c)
	}

	// A container without the optional parts leaves them out, as before.
	b, err = json.Marshal(Container{ContainerBody: ContainerBody{ID: "c-1"}, State: Queued})
	if err != nil {
		t.Fatal(err)
	}
	fields = nil
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"env", "image", "labels", "locked_at", "started_at", "finished_at",
		"kill_requested", "runner_seen", "logs_truncated", "kill_reason", "logs_error", "health_check", "health"} {
		if _, ok := fields[absent]; ok {
			t.Errorf("%s is sent for a container without it: %s", absent, b)
		}
	}
}
