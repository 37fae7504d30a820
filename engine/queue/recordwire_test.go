package queue

import (
	"encoding/json"
	"testing"
)

// recordWire is a stored record with every stored field set, as stores
// have always held it: a record written by an older version must load,
// and one written now must read the same to it.
const recordWire = `{"state":"Complete","priority":4,"held":true,` +
	`"runtime_constraints":{"vcpus":4,"ram":6442450944,"scratch":1,"gpus":1},` +
	`"first_seen_at":"2026-03-04T05:06:07.000891011Z","id":"c-1","name":"job","command":["sh","-c","x"],` +
	`"env":{"K":"v"},"image":"img","labels":{"team":"x"},` +
	`"scheduling":{"preemptible":true,"max_run_time":"1m30s","constraints":{"gpu":"a100"},"supervisor":true},` +
	`"exit_code":137,"attempts":2,"max_attempts":3,"restart_policy":"on-failure","instance_type":"small",` +
	`"instance_id":"i-1","created_at":"2026-03-04T05:06:07.000891011Z","locked_at":"2026-03-04T05:06:08.000891011Z",` +
	`"started_at":"2026-03-04T05:06:09.000891011Z","finished_at":"2026-03-04T06:06:07.000891011Z",` +
	`"reason":"exit 137","reason_code":"KILLED","kill_requested":true,"runner_seen":true,` +
	`"logs_truncated":4398046510080,"kill_reason":"operator","logs_error":"instance gone","seq":42,` +
	`"health_check":{"command":["true"],"interval":"10s","retries":3}}`

// TestRecordWireBytes: a stored record read the way load reads it is
// written back byte for byte, by the store's encoder and by json.Marshal
// alike (however the record's Go type is put together).
func TestRecordWireBytes(t *testing.T) {
	var c Container
	if err := json.Unmarshal([]byte(recordWire), &c); err != nil {
		t.Fatal(err)
	}
	b, err := appendContainer(nil, &c)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != recordWire {
		t.Errorf("appendContainer:\n got  %s\n want %s", b, recordWire)
	}
	if b, _ := json.Marshal(&c); string(b) != recordWire {
		t.Errorf("json.Marshal:\n got  %s\n want %s", b, recordWire)
	}
}
