package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"dispatch-tui/engine/view"
)

// fakeCost is a report as a server would send it.
func fakeCost() *view.CostReport {
	return &view.CostReport{
		From: t0.Add(-24 * time.Hour), To: t0, By: "label=team", Bill: 2.40, Allocated: 1.60,
		Groups:     []view.CostGroup{{Key: "genomics", Dollars: 1.20, Containers: 3}, {Key: "phys\x1b[31mics", Dollars: 0.40, Containers: 1}},
		Waste:      []view.CostWaste{{Type: "small", Kind: "idle", Dollars: 0.60, Share: 0.25}, {Type: "small", Kind: "boot", Dollars: 0.20, Share: 1.0 / 12}},
		Projection: view.CostProjection{RatePerHour: 0.17, Today: 2.40, Day: 4.44, Month: 128.57},
		Budgets:    []view.BudgetLine{{Name: "fleet", RatePerHour: 0.17, Limit: 0.15, Over: true}},
		Instances:  []view.InstanceCost{{ID: "i-0000", Type: "small", RatePerHour: 0.02, Dollars: 1.234}},
		Queued: &view.QueuedCost{
			Lines:   []view.QueuedLine{{Type: "small", Containers: 3, PricePerHour: 0.02, MedianRun: 25 * time.Minute, Finished: 4, Known: true, Dollars: 0.025}, {Type: "large", Containers: 2}},
			Ranges:  []view.QueuedRange{{Types: []string{"small", "medium"}, Containers: 5, Known: true, Low: 0.04, High: 0.06}, {Containers: 4}},
			Dollars: 0.025, Low: 0.065, High: 0.085, Unknown: 2, Untyped: 4,
		},
	}
}

// The :cost view at 80×24: the projection, the bill and the groups in
// view, the rest a scroll away; nothing wider than the terminal, no raw
// escape; esc goes back to the table.
func TestCostView(t *testing.T) {
	m, fb := newTest(t, Options{})
	fb.cost = fakeCost()
	size(m, 80, 24)
	load(t, m, fb, fakeSnapshot(3, 7))
	press(m, ":")
	typeText(m, "cost label=team")
	runCmd(m, press(m, "enter"))
	if m.mode != modeCost || fb.by != "label=team" {
		t.Fatalf("mode %d, asked by %q; want the cost view by label=team", m.mode, fb.by)
	}
	got := plain(m)
	lines := strings.Split(got, "\n")
	if len(lines) != 24 {
		t.Errorf("%d lines, want 24:\n%s", len(lines), got)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > 80 {
			t.Errorf("line %d is %d cells wide: %q", i, w, l)
		}
	}
	for _, want := range []string{
		"Cost by label=team",
		"now $0.17/h   today $2.40   day $4.44   month $128.57 (at this rate)",
		"bill $2.40: containers $1.60, waste $0.80 (33.3%)",
		"budget fleet: $0.17/h of $0.15/h OVER: no new instances; nothing drained",
		"TEAM", "genomics", "$1.20", "50.0%", `phys\x1b[31mics`,
		"WASTE: TYPE", "idle", "25.0%",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the cost view lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(m.View().Content, "\x1b[31m") {
		t.Error("a label's escape reached the terminal")
	}
	press(m, "pgdown")
	got = plain(m)
	for _, want := range []string{
		"QUEUED: TYPE", "25m0s of 4", "$0.03", "unknown",
		"NO TYPE YET: MAY GET", "small,medium", "$0.04–$0.06", "(no type holds them)",
		"queued $0.07–$0.09 (type's price × median run of those finished on it)",
		"not estimated: 2 locked, 4 not locked (none finished on their types)",
		"INSTANCE", "i-0000", "$0.02", "$1.23",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("scrolled down, the cost view lacks %q:\n%s", want, got)
		}
	}
	// The report reads the whole queue: a snapshot reads it again only
	// costRefresh after the last read.
	calls := fb.costCalls
	runCmd(m, m.onSnapshot(snapshotMsg{gen: m.fetchGen, snap: fakeSnapshot(3, 7)}))
	if fb.costCalls != calls {
		t.Errorf("a snapshot at once read the report again (%d reads, want %d)", fb.costCalls, calls)
	}
	m.now = func() time.Time { return t0.Add(costRefresh) }
	m.fetching = false
	runCmd(m, m.onSnapshot(snapshotMsg{gen: m.fetchGen, snap: fakeSnapshot(3, 7)}))
	if fb.costCalls != calls+1 {
		t.Errorf("a snapshot %v later: %d reads of the report, want %d", costRefresh, fb.costCalls, calls+1)
	}
	press(m, "esc")
	if m.mode != modeNormal {
		t.Errorf("esc left mode %d, want the table", m.mode)
	}
}

// A report that cannot be had says so in the view and in the details.
func TestCostUnavailable(t *testing.T) {
	m, fb := newTest(t, Options{})
	size(m, 80, 24)
	load(t, m, fb, fakeSnapshot(3, 7))
	press(m, ":")
	typeText(m, "cost")
	runCmd(m, press(m, "enter"))
	if got := plain(m); !strings.Contains(got, "cost unavailable: no cost report") || !strings.Contains(got, ":cost label=KEY") {
		t.Errorf("the cost view hides the failure:\n%s", got)
	}
}

// The details say what a container cost so far, and an instance's burn
// and total, from the backend.
func TestCostInDetails(t *testing.T) {
	m, fb := newTest(t, Options{})
	fb.cost = fakeCost()
	fb.costs = map[string]float64{"c-000003": 0.6133}
	size(m, 120, 40)
	load(t, m, fb, fakeSnapshot(3, 7))
	press(m, "2")
	m.table().SetCursor("c-000003")
	runCmd(m, press(m, "enter"))
	if got := plain(m); !strings.Contains(got, "cost:          $0.61 so far") {
		t.Errorf("container details lack their cost:\n%s", got)
	}
	press(m, "esc", "1")
	m.table().SetCursor("i-0000")
	runCmd(m, press(m, "enter"))
	if got := plain(m); !strings.Contains(got, "cost:          $0.02/h now, $1.23 so far") {
		t.Errorf("instance details lack the burn and total:\n%s", got)
	}
	press(m, "esc", "down")
	runCmd(m, press(m, "enter"))
	if got := plain(m); !strings.Contains(got, "cost:          - (not in the cost ledger yet)") {
		t.Errorf("an instance the ledger lacks:\n%s", got)
	}
}
