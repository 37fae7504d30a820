package cli

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"dispatch-tui/engine/cost"
	"dispatch-tui/engine/view"
)

// costReport is a report as the server sends it.
var costReport = view.CostReport{
	From: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), To: time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC),
	By: "label=team", Bill: 2.373333, Allocated: 1.6,
	Groups:     []cost.Group{{Key: "(none)", Dollars: 0.906667, Containers: 1}, {Key: "genomics", Dollars: 0.613333, Containers: 2}, {Key: "phys\x1b[31mics", Dollars: 0.08, Containers: 1}},
	Waste:      []cost.Waste{{Type: "c2", Kind: cost.Idle, Dollars: 0.173333, Share: 0.073}, {Type: "c8", Kind: cost.Boot, Dollars: 0.106667, Share: 0.045}},
	Projection: cost.Projection{RatePerHour: 4, Today: 0.8, Day: 46.133333, Month: 2926.133333},
	Budgets:    []view.BudgetLine{{Name: "fleet", RatePerHour: 5.2, Limit: 5, Over: true}},
	Queued: &view.QueuedCost{
		Lines: []view.QueuedLine{
			{Type: "c2", Containers: 3, PricePerHour: 0.4, MedianRun: 25 * time.Minute, Finished: 4, Known: true, Dollars: 0.5},
			{Type: "gpu", Containers: 2},
		},
		Ranges: []view.QueuedRange{
			{Types: []string{"c2", "c8"}, Containers: 3, Known: true, Low: 0.5, High: 9.6},
			{Types: []string{"gpu"}, Containers: 4},
		},
		Dollars: 0.5, Low: 1, High: 10.1, Unknown: 2, Untyped: 4,
	},
}

func TestCostOutputs(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if r.URL.Path != "/v1/cost" {
			http.Error(w, `{"error":"unexpected"}`, 500)
			return
		}
		writeJSONTo(w, costReport)
	})
	code, out, errOut := runCLI(t, f.srv.URL, nil, "", "cost", "--by", "label=team", "--since", "24h")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"TEAM", "genomics", "$0.61", "phys\\x1b[31mics", "c2", "idle", "7.3%",
		"bill $2.37, of which containers $1.60",
		"now $4.00/h; today $0.80 so far, $46.13 at this rate; this month $2926.13 at this rate",
		"budget fleet: $5.20/h of $5.00/h (over:",
		"queued work (estimate: the type's price × the median run of containers finished on it)",
		"25m0s of 4", "$0.50",
		"not locked to a type yet (from the cheapest to the dearest type they may get)",
		"c2,c8", "$0.50–$9.60",
		"queued $1.00–$10.10; 2 not estimated (no container has finished on their type); 4 not locked to a type and not estimated (none finished on a type they may get)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsRune(out, 0x1b) {
		t.Errorf("table prints a raw escape:\n%q", out)
	}
	q := f.requests()[0].query
	if q.Get("by") != "label=team" || q.Get("since") != "24h0m0s" {
		t.Errorf("asked %v, want by=label=team since=24h0m0s", q)
	}

	_, out, _ = runCLI(t, f.srv.URL, nil, "", "cost", "-o", "json")
	var fromJSON view.CostReport
	if err := json.Unmarshal([]byte(out), &fromJSON); err != nil || !reflect.DeepEqual(fromJSON, costReport) {
		t.Errorf("-o json read back %+v (%v), want %+v", fromJSON, err, costReport)
	}
	_, out, _ = runCLI(t, f.srv.URL, nil, "", "cost", "-o", "yaml")
	var fromYAML view.CostReport
	if err := yaml.Unmarshal([]byte(out), &fromYAML); err != nil || !reflect.DeepEqual(fromYAML, costReport) {
		t.Errorf("-o yaml read back %+v (%v)", fromYAML, err)
	}
	_, out, _ = runCLI(t, f.srv.URL, nil, "", "cost", "-o", "csv")
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("-o csv: %v\n%s", err, out)
	}
	if want := 1 + 3 + 2 + 6 + 1 + 2 + 4 + 5; len(rows) != want {
		t.Errorf("-o csv: %d rows, want %d:\n%s", len(rows), want, out)
	}
	if got := strings.Join(rows[2], ","); got != "group,genomics,label=team,2,0.613333," {
		t.Errorf("-o csv: the genomics row is %q", got)
	}

	if got := strings.Join(rows[len(rows)-11], ","); got != "queued,c2,estimate,3,0.500000," {
		t.Errorf("-o csv: the queued c2 row is %q", got)
	}
	if got := strings.Join(rows[len(rows)-8], ","); got != "queued,c2 c8,high,3,9.600000," {
		t.Errorf("-o csv: the high end of the c2..c8 range is %q", got)
	}
	if got := strings.Join(rows[len(rows)-3], ","); got != "queued,total,high,,10.100000," {
		t.Errorf("-o csv: the total's high end is %q", got)
	}
	if got := strings.Join(rows[len(rows)-1], ","); got != "queued,untyped,,4,," {
		t.Errorf("-o csv: the untyped row is %q", got)
	}

	for _, args := range [][]string{{"cost", "--by", "team"}, {"cost", "-o", "wide"}, {"cost", "--since", "-1h"}} {
		if code, _, errOut := runCLI(t, f.srv.URL, nil, "", args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q; want a usage error", args, code, errOut)
		}
	}
}

// ls containers shows what each cost: COST with -o wide, cost in -o json.
func TestListContainersCost(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		io.WriteString(w, `{"items":[{"id":"c-00000000000000a1","state":"Complete","command":["true"],"cost":0.6133}],"items_available":1}`)
	})
	code, out, errOut := runCLI(t, f.srv.URL, map[string]string{"COLUMNS": "300"}, "", "ls", "containers", "-o", "wide")
	if code != 0 || !strings.Contains(out, "COST") || !strings.Contains(out, "$0.61") {
		t.Errorf("-o wide: exit %d, stderr %q, want a COST column with $0.61:\n%s", code, errOut, out)
	}
	_, out, _ = runCLI(t, f.srv.URL, nil, "", "ls", "containers", "-o", "json")
	var list struct {
		Items []struct {
			ID   string   `json:"id"`
			Cost *float64 `json:"cost"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Items) != 1 || list.Items[0].Cost == nil || *list.Items[0].Cost != 0.6133 {
		t.Errorf("-o json: %v, want cost 0.6133:\n%s", err, out)
	}
}
