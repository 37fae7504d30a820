package api

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/url"
	"testing"
	"time"

	"dispatch-tui/engine/queue"
)

// GET /v1/cost on a real engine: a labelled container that ran an hour on
// a $1.00/h small bears that hour, summed under its label.
func TestCostEndpoint(t *testing.T) {
	e := newEnv(t)
	id := e.Submit(queue.Spec{Command: []string{"run-forever"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2}, Labels: map[string]string{"team": "genomics"}})
	e.until("running", 60, func() bool { return e.state(id) == queue.Running })
	e.clk.Advance(time.Hour)
	e.step(2)
	ctx := context.Background()
	r, err := e.client.Cost(ctx, "label=team", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Groups) != 1 || r.Groups[0].Key != "genomics" || r.Groups[0].Containers != 1 {
		t.Fatalf("groups %+v, want genomics alone", r.Groups)
	}
	// An hour and the few steps around it, at $1.00/h.
	if d := r.Groups[0].Dollars; math.Abs(d-1.0) > 0.05 {
		t.Errorf("genomics cost $%.4f, want about $1.00", d)
	}
	if r.Projection.RatePerHour != 1.0 {
		t.Errorf("rate $%.2f/h, want $1.00/h", r.Projection.RatePerHour)
	}
	// The live instance's burn: its price now and its whole bill so far.
	if len(r.Instances) != 1 || r.Instances[0].RatePerHour != 1.0 || math.Abs(r.Instances[0].Dollars-r.Bill) > 1e-9 {
		t.Errorf("instances %+v, want one at $1.00/h costing the bill $%.4f", r.Instances, r.Bill)
	}
	if r.Queued == nil || r.Queued.Untyped != 0 || len(r.Queued.Lines) != 0 || len(r.Queued.Ranges) != 0 {
		t.Errorf("queued %+v, want an empty estimate (nothing waits)", r.Queued)
	}
	recent, err := e.client.Cost(ctx, "type", 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(recent.Groups) != 1 || recent.Groups[0].Key != "small" || math.Abs(recent.Groups[0].Dollars-0.5) > 1e-6 {
		t.Errorf("last 30m by type: %+v, want small $0.50", recent.Groups)
	}
	// The container's listing and record carry the same cost.
	page, err := e.client.ListContainerPage(ctx, ListQuery{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Costs) != 1 || page.Costs[0] != r.Groups[0].Dollars {
		t.Errorf("listing's costs %v, want [%v]", page.Costs, r.Groups[0].Dollars)
	}
	var one ContainerItem
	if err := e.client.do(ctx, http.MethodGet, "/v1/containers/"+id, nil, nil, &one); err != nil || one.Cost != r.Groups[0].Dollars || one.ID != id {
		t.Errorf("GET /v1/containers/%s: cost %v, id %s (%v)", id, one.Cost, one.ID, err)
	}
	if d, err := e.client.ContainerCost(ctx, id); err != nil || d != r.Groups[0].Dollars {
		t.Errorf("ContainerCost(%s) = %v (%v), want %v", id, d, err, r.Groups[0].Dollars)
	}
	for _, q := range []url.Values{{"by": {"team"}}, {"since": {"yesterday"}}, {"since": {"-1h"}}} {
		err := e.client.do(ctx, http.MethodGet, "/v1/cost", q, nil, new(any))
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Field == "" {
			t.Errorf("%v: %v, want a 400 naming the field", q, err)
		}
	}
}
