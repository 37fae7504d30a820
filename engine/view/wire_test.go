package view

import (
	"encoding/json"
	"testing"
	"time"
)

// The submit request and the summary keep the JSON they had when they
// were the queue's and the engine's own types: these strings are what
// those types wrote, so an older client or script reads the same bytes.
const (
	specWire = `{"name":"web","command":["sh","-c","x"],"env":{"K":"v"},"image":"img","labels":{"team":"a"},` +
		`"runtime_constraints":{"vcpus":2,"ram":1073741824,"scratch":2147483648,"gpus":1},` +
		`"scheduling":{"preemptible":true,"max_run_time":"1m30s","constraints":{"gpu":"a100"},"supervisor":true},` +
		`"priority":3,"max_attempts":2,"restart_policy":"on-failure",` +
		`"health_check":{"command":["true"],"interval":"1m0s","timeout":"1s","retries":2}}`
	emptySpecWire = `{"name":"","command":null,"runtime_constraints":{"vcpus":0,"ram":0,"scratch":0,"gpus":0},` +
		`"scheduling":{"preemptible":null,"max_run_time":"0s"},"max_attempts":0,"restart_policy":""}`
	summaryWire = `{"driver":"ec2","instances":{"idle":2,"running":1},"containers":{"Queued":5,"Running":1},` +
		`"price_per_hour":1.25,"quota_limit":10,"at_quota":true,"paused":true,"longest_wait":90000000000,` +
		`"last_pass":3000000,"idle_behaviors":{"drain":1,"run":2},"containers_gen":42,` +
		`"store_unavailable_since":"2026-03-14T12:00:00Z","store_error":"disk full","store":"postgres"}`
	emptySummaryWire = `{"driver":"","instances":null,"containers":null,"price_per_hour":0,"quota_limit":0,` +
		`"at_quota":false,"paused":false,"longest_wait":0,"last_pass":0,"idle_behaviors":null,"containers_gen":0,"store":""}`
)

func fullSpec() Spec {
	p, pre := 3, true
	return Spec{Name: "web", Command: []string{"sh", "-c", "x"}, Env: map[string]string{"K": "v"}, Image: "img",
		Labels: map[string]string{"team": "a"}, RuntimeConstraints: Constraints{VCPUs: 2, RAM: 1 << 30, Scratch: 2 << 30, GPUs: 1},
		Scheduling: Scheduling{Preemptible: &pre, MaxRunTime: Duration(90 * time.Second),
			Constraints: map[string]string{"gpu": "a100"}, Supervisor: true},
		Priority: &p, MaxAttempts: 2, RestartPolicy: "on-failure",
		HealthCheck: &HealthCheck{Command: []string{"true"}, Interval: Duration(time.Minute), Timeout: Duration(time.Second), Retries: 2}}
}

func fullSummary() Summary {
	return Summary{Driver: "ec2", Instances: map[InstanceState]int{InstanceIdle: 2, InstanceRunning: 1},
		Containers: map[State]int{Queued: 5, Running: 1}, PricePerHour: 1.25, QuotaLimit: 10, AtQuota: true,
		Paused: true, LongestWait: 90 * time.Second, LastPass: 3 * time.Millisecond,
		Behaviors: map[IdleBehavior]int{IdleRun: 2, IdleDrain: 1}, ContainersGen: 42,
		StoreUnavailableSince: time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC), StoreError: "disk full", Store: "postgres"}
}

// TestSpecAndSummaryJSON: each writes the old bytes and reads them back
// to itself.
func TestSpecAndSummaryJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
		into func() any
	}{
		{"spec", fullSpec(), specWire, func() any { return new(Spec) }},
		{"empty spec", Spec{}, emptySpecWire, func() any { return new(Spec) }},
		{"summary", fullSummary(), summaryWire, func() any { return new(Summary) }},
		{"empty summary", Summary{}, emptySummaryWire, func() any { return new(Summary) }},
	} {
		got, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s writes\n %s\nwant the old wire\n %s", tc.name, got, tc.want)
			continue
		}
		back := tc.into()
		if err := json.Unmarshal(got, back); err != nil {
			t.Fatalf("%s: reading its own JSON: %v", tc.name, err)
		}
		again, _ := json.Marshal(back)
		if string(again) != tc.want {
			t.Errorf("%s read back writes\n %s\nwant\n %s", tc.name, again, tc.want)
		}
	}
}
