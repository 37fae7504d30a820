package view

import (
	"encoding/json"
	"testing"
)

// containerWire is a container with every field set, as the API has
// always sent it: the field names and their order are what scripts, the
// CLI and the console read.
const containerWire = `{"state":"Running","priority":7,"held":true,` +
	`"runtime_constraints":{"vcpus":2,"ram":1073741824,"scratch":2147483648,"gpus":1},` +
	`"first_seen_at":"2026-03-14T12:00:00Z","id":"c-0123456789abcdef","name":"n","command":["sh","-c","x"],` +
	`"env":{"K":"v"},"image":"img","labels":{"team":"a"},` +
	`"scheduling":{"preemptible":true,"max_run_time":"1m30s","constraints":{"gpu":"a100"},"supervisor":true},` +
	`"exit_code":3,"attempts":2,"max_attempts":3,"restart_policy":"on-failure","instance_type":"small",` +
	`"instance_id":"i-1","created_at":"2026-03-14T12:00:00Z","locked_at":"2026-03-14T12:00:01Z",` +
	`"started_at":"2026-03-14T12:00:02Z","finished_at":"2026-03-14T12:00:03Z","reason":"r","reason_code":"KILLED",` +
	`"kill_requested":true,"runner_seen":true,"logs_truncated":4096,"kill_reason":"k","logs_error":"e","seq":9,` +
	`"health_check":{"command":["true"],"interval":"1m0s","timeout":"1s","retries":2},` +
	`"health":{"state":"healthy","failures":0,"last_check":"2026-03-14T12:00:00Z","last_result":"ok"}}`

// TestContainerWireBytes: the API's bytes read into a view and written
// out again are the same bytes, in the same order (however the view's Go
// type is put together), and the full view writes them.
func TestContainerWireBytes(t *testing.T) {
	var c Container
	if err := json.Unmarshal([]byte(containerWire), &c); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != containerWire {
		t.Errorf("read and written again:\n got  %s\n want %s", b, containerWire)
	}
	if b, _ := json.Marshal(fullContainer()); string(b) != containerWire {
		t.Errorf("full container:\n got  %s\n want %s", b, containerWire)
	}
}
