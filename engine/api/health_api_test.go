package api

import (
	"encoding/json"
	"strings"
	"testing"

	"dispatch-tui/engine"
)

// A submitted health check and scheduling.preemptible come back with what
// was decided (defaults filled in); a bad health check is a 400 naming the
// field, with nothing stored.
func TestSubmitHealthCheckAndPreemptible(t *testing.T) {
	e := newEnv(t)
	resp, data := e.req(t, "POST", "/v1/containers", strings.NewReader(
		`{"command":["run-forever"],"priority":0,"health_check":{"command":["true"],"interval":"2s"}}`), nil)
	if resp.StatusCode != 201 {
		t.Fatalf("submit: %d %s", resp.StatusCode, data)
	}
	for _, want := range []string{`"preemptible":false`, `"health_check":{"command":["true"],"interval":"2s","timeout":"2s","retries":3}`} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("container lacks %s: %s", want, data)
		}
	}
	for _, tc := range []struct{ body, field string }{
		{`{"command":["x"],"health_check":{"command":[]}}`, "health_check.command"},
		{`{"command":["x"],"health_check":{"command":["true"],"interval":"1s","timeout":"5s"}}`, "health_check.timeout"},
		{`{"command":["x"],"health_check":{"command":["true"],"interval":"soon"}}`, "health_check.interval"},
		{`{"command":["x"],"health_check":{"command":["true"],"every":"1s"}}`, "health_check.every"},
		{`{"command":["x"],"health_check":{"command":["true"],"retries":-1}}`, "health_check.retries"},
		{`{"command":["x"],"scheduling":{"preemptible":"yes"}}`, "scheduling.preemptible"},
	} {
		resp, data := e.req(t, "POST", "/v1/containers", strings.NewReader(tc.body), nil)
		var eb errorBody
		if resp.StatusCode != 400 || json.Unmarshal(data, &eb) != nil || eb.Field != tc.field {
			t.Errorf("%s: %d %s, want 400 on %s", tc.body, resp.StatusCode, data, tc.field)
		}
	}
	if _, n := e.eng.Containers(engine.ListOptions{}); n != 1 {
		t.Fatalf("%d containers stored, want 1", n)
	}
}
