package api

import (
	"encoding/json"
	"net/http"
	"testing"

	"dispatch-tui/cloud"
)

// An instance whose probes fail is served with unreachable_since and
// last_error, with one probe_error event, and loses them, with one
// probe_ok event, when it answers again.
func TestInstanceUnreachableServed(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	_, inst := e.running("web")
	e.cloud.Break(cloud.InstanceID(inst))

	raw := func() map[string]any {
		resp, body := e.do(http.MethodGet, "/v1/instances", nil, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/instances: %s %s", resp.Status, body)
		}
		var got struct{ Items []map[string]any }
		if err := json.Unmarshal(body, &got); err != nil || len(got.Items) != 1 {
			t.Fatalf("GET /v1/instances: %s (%v)", body, err)
		}
		return got.Items[0]
	}
	e.until("unreachable", 30, func() bool { return raw()["unreachable_since"] != nil })
	if v := raw(); v["last_error"] == nil || v["last_error"] == "" {
		t.Fatalf("unreachable without last_error: %v", v)
	}
	insts, err := e.client.Instances(ctx)
	if err != nil || insts[0].UnreachableSince.IsZero() {
		t.Fatalf("client: %+v, %v", insts, err)
	}

	e.cloud.Unbreak(cloud.InstanceID(inst))
	e.until("reachable", 30, func() bool { return raw()["unreachable_since"] == nil })
	e.step(1) // the engine records the pool's events on its next pass
	evs, err := e.client.Events(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, ev := range evs {
		if ev.Target == inst {
			counts[ev.Action]++
		}
	}
	if counts["probe_error"] != 1 || counts["probe_ok"] != 1 {
		t.Fatalf("events for %s: %v", inst, counts)
	}
}
