package cost

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestEstimateQueued prices a queue computed by hand: each locked container
// at its type's price × the median of the type's runs; types with no runs,
// or not configured, counted as unknown; unlocked ones as a range over the
// types they may get, or untyped when none of those is known.
func TestEstimateQueued(t *testing.T) {
	prices := map[string]float64{"c2": 0.40, "c8": 1.60, "gpu": 3.00, "recent": 0.10}
	price := func(n string) (float64, bool) { p, ok := prices[n]; return p, ok }
	recent := make([]time.Duration, 0, 2*RunsKept)
	for range RunsKept {
		recent = append(recent, 10*time.Hour) // older: beyond the last RunsKept
	}
	for range RunsKept {
		recent = append(recent, time.Hour)
	}
	w := Waiting{
		Locked: []string{"c2", "c8", "c2", "gpu", "gone", "c2", "gpu", "recent"},
		Unlocked: []Unlocked{
			{Types: []string{"c2", "c8"}, Containers: 3},
			{Types: []string{"gpu"}, Containers: 2}, // no run on gpu: untyped
			{Containers: 2},                         // no type holds them: untyped
			{Types: []string{"c2", "gpu"}, Containers: 1},
		},
		Runs: map[string][]time.Duration{
			"c2":     {10 * time.Minute, 30 * time.Minute, 20 * time.Minute, 50 * time.Minute}, // median 25m
			"c8":     {time.Hour, 4 * time.Hour, 2 * time.Hour},                                // median 2h
			"gone":   {time.Hour},                                                              // not configured
			"recent": recent,                                                                   // median of the last 1000: 1h
		},
	}
	q := EstimateQueued(w, price)

	// c2: 3 × $0.40 × 25/60 h = $0.50; c8: 1 × $1.60 × 2 h = $3.20;
	// recent: 1 × $0.10 × 1 h = $0.10.
	if math.Abs(q.Dollars-3.80) > 1e-9 {
		t.Errorf("dollars %.6f, want 3.80", q.Dollars)
	}
	if q.Unknown != 3 || q.Untyped != 4 {
		t.Errorf("unknown %d untyped %d, want 3 (2 gpu, 1 gone) and 4", q.Unknown, q.Untyped)
	}
	want := []struct {
		typ    string
		n      int
		known  bool
		median time.Duration
		runs   int
		cost   float64
	}{
		{"c2", 3, true, 25 * time.Minute, 4, 0.50},
		{"c8", 1, true, 2 * time.Hour, 3, 3.20},
		{"gone", 1, false, 0, 0, 0},
		{"gpu", 2, false, 0, 0, 0},
		{"recent", 1, true, time.Hour, RunsKept, 0.10},
	}
	if len(q.Lines) != len(want) {
		t.Fatalf("lines %+v, want %d", q.Lines, len(want))
	}
	for i, x := range want {
		l := q.Lines[i]
		if l.Type != x.typ || l.Containers != x.n || l.Known != x.known || l.MedianRun != x.median || l.Finished != x.runs || math.Abs(l.Dollars-x.cost) > 1e-9 {
			t.Errorf("line %d is %+v, want %+v", i, l, x)
		}
	}
	// Unlocked: 3 on c2..c8 = 3 × $0.40 × 25/60 h .. 3 × $3.20 = $0.50 .. $9.60;
	// 1 on c2 or gpu (unknown) = $1/6 both ends.
	sixth := 0.40 * 25 / 60
	if lo, hi := 3.80+0.50+sixth, 3.80+9.60+sixth; math.Abs(q.Low-lo) > 1e-9 || math.Abs(q.High-hi) > 1e-9 {
		t.Errorf("range $%.6f..$%.6f, want $%.6f..$%.6f", q.Low, q.High, lo, hi)
	}
	wantR := []struct {
		types     string
		n         int
		known     bool
		low, high float64
	}{
		{"", 2, false, 0, 0},
		{"c2 c8", 3, true, 0.50, 9.60},
		{"c2 gpu", 1, true, sixth, sixth},
		{"gpu", 2, false, 0, 0},
	}
	if len(q.Ranges) != len(wantR) {
		t.Fatalf("ranges %+v, want %d", q.Ranges, len(wantR))
	}
	for i, x := range wantR {
		r := q.Ranges[i]
		if strings.Join(r.Types, " ") != x.types || r.Containers != x.n || r.Known != x.known || math.Abs(r.Low-x.low) > 1e-9 || math.Abs(r.High-x.high) > 1e-9 {
			t.Errorf("range %d is %+v, want %+v", i, r, x)
		}
	}
	if len(w.Runs["c2"]) != 4 || w.Runs["c2"][0] != 10*time.Minute {
		t.Errorf("the estimate reordered the runs it was given: %v", w.Runs["c2"])
	}
}

func TestEstimateQueuedEmpty(t *testing.T) {
	q := EstimateQueued(Waiting{}, func(string) (float64, bool) { return 1, true })
	if q.Dollars != 0 || q.Low != 0 || q.High != 0 || q.Unknown != 0 || q.Untyped != 0 || len(q.Lines) != 0 || len(q.Ranges) != 0 {
		t.Errorf("empty queue estimated %+v", q)
	}
}
