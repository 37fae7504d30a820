package engine

import (
	"encoding/json"
	"testing"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// TestTypeSummaryJSON: GET /v1/types sends what it always did, the
// configured type's own JSON followed by the counts, byte for byte, and
// the edge's copy of the type shares nothing with the config.
func TestTypeSummaryJSON(t *testing.T) {
	it := cloud.InstanceType{Name: "small", ProviderType: "t3.small", VCPUs: 2, RAM: 4 << 30, Scratch: 8 << 30, GPUs: 1,
		Price: 0.02, Preemptible: true, Labels: map[string]string{"gpu": "a100"}}
	// The shape the API sent before the edge had its own type.
	old := struct {
		cloud.InstanceType
		Count   int                  `json:"count"`
		ByState map[worker.State]int `json:"by_state"`
	}{it, 3, map[worker.State]int{worker.StateIdle: 1, worker.StateBooting: 2}}
	want, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	v := typeSummary(it)
	v.Count, v.ByState[view.InstanceIdle], v.ByState[view.InstanceBooting] = 3, 1, 2
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("edge's type summary\n %s\nthe old one\n %s", got, want)
	}
	it.Labels["gpu"] = "changed"
	if v.Labels["gpu"] != "a100" {
		t.Error("the view shares the config's labels")
	}
}
