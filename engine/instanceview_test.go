package engine

import (
	"encoding/json"
	"testing"
	"time"

	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// TestInstanceViewJSON: the API sends the instance as it always did: the
// edge's view of a pool's instance has, byte for byte, the JSON the
// pool's view had, and none of the pool's own bookkeeping.
func TestInstanceViewJSON(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	w := worker.InstanceView{
		Instance: view.Instance{
			ID:               "i-1",
			Type:             "small",
			ProviderType:     "t3.small",
			Address:          "10.0.0.1",
			Price:            0.02,
			State:            worker.StateRunning,
			IdleBehavior:     worker.IdleHold,
			Containers:       []string{"c-1"},
			LastContainer:    "c-0",
			LastBusy:         t0,
			AppearedAt:       t0,
			LastProbe:        t0,
			LastError:        "e",
			ProbeFailing:     true,
			Preempted:        true,
			UnreachableSince: t0,
			ProbeError:       "p",
			CreatedAt:        t0,
		},
		ContainersLost: "gone",
		Reported:       []runner.Status{{ID: "c-1"}},
		ListedAt:       t0,
	}
	want, err := json.Marshal(&w)
	if err != nil {
		t.Fatal(err)
	}
	v := instanceView(&w)
	got, err := json.Marshal(&v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("edge's view\n %s\npool's view\n %s", got, want)
	}
	w.Containers[0] = "changed"
	if v.Containers[0] != "c-1" {
		t.Error("the view shares the pool's slice of containers")
	}
}
