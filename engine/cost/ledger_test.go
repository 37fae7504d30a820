package cost

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("%s: %.9f, want %.9f", what, got, want)
	}
}

func mins(n int) time.Time { return t0.Add(time.Duration(n) * time.Minute) }

// A price that changes mid-life (a spot price) changes what the rest of
// the life costs, and only that.
func TestPriceChangeMidLife(t *testing.T) {
	l := New(0)
	run := func(at int, price float64) {
		l.Observe(mins(at), []Sample{{ID: "i", Type: "s", Price: price, Kind: Running, Containers: []string{"a"}}}, nil, true)
	}
	run(0, 0.60)
	run(30, 1.20)
	run(60, 1.20)
	costs := l.Costs([]string{"a"}, mins(60))
	near(t, "a", costs["a"], 0.30+0.60)
	rep := l.Report(Query{By: By{Field: "type"}, Now: mins(60)})
	near(t, "rate", rep.Projection.RatePerHour, 1.20)
	near(t, "bill", rep.Bill, 0.90)
}

// The boot goes to the containers an instance was created for only when
// they start within createdForGrace of its end; otherwise it is waste no
// container bears.
func TestBootGoesToTheContainersCreatedFor(t *testing.T) {
	for _, tc := range []struct {
		idle     int // minutes idle between boot and the first start
		wantBoot bool
	}{{0, true}, {1, true}, {5, false}} {
		l := New(0)
		obs := func(at int, k Kind, on ...string) {
			l.Observe(mins(at), []Sample{{ID: "i", Type: "s", Price: 0.60, Kind: k, Containers: on}}, map[string]ContainerInfo{"a": {Share: 0.5}, "b": {Share: 0.25}}, true)
		}
		obs(0, Boot)
		obs(10, Idle)
		obs(10+tc.idle, Running, "a", "b")
		obs(20+tc.idle, Idle)
		costs := l.Costs([]string{"a", "b"}, mins(30+tc.idle))
		boot := 0.0
		if tc.wantBoot {
			boot = 0.10
		}
		near(t, "a", costs["a"], (0.10+boot)*2/3)
		near(t, "b", costs["b"], (0.10+boot)/3)
	}
}

func TestParseBy(t *testing.T) {
	for in, want := range map[string]By{"type": {Field: "type"}, "state": {Field: "state"}, "label=team": {Label: "team"}} {
		if got, err := ParseBy(in); err != nil || got != want || got.String() != in {
			t.Errorf("ParseBy(%q) = %+v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "label=", "team", "labels=team"} {
		if _, err := ParseBy(in); err == nil {
			t.Errorf("ParseBy(%q): no error", in)
		}
	}
}

// Records of instances gone past the retention are dropped, and their
// dollars stay in the totals.
func TestPruneKeepsTotals(t *testing.T) {
	l := New(time.Hour)
	l.CountLabels([]string{"team=x", "team=y"})
	info := map[string]ContainerInfo{"a": {Labels: map[string]string{"team": "x"}, Share: 1}}
	l.Observe(mins(0), []Sample{{ID: "i", Type: "s", Price: 0.60, Kind: Running, Containers: []string{"a"}}}, info, true)
	l.Observe(mins(60), nil, nil, true)
	near(t, "total", l.Totals(mins(60))[TypeKind{"s", Running}], 0.60)
	near(t, "team=x", l.LabelTotals(mins(60))["team=x"], 0.60)
	near(t, "team=y", l.LabelTotals(mins(60))["team=y"], 0)
	l.Observe(mins(200), nil, nil, true)
	if len(l.insts) != 0 || len(l.conts) != 0 {
		t.Errorf("kept %d instances and %d containers past the retention", len(l.insts), len(l.conts))
	}
	near(t, "total after pruning", l.Totals(mins(200))[TypeKind{"s", Running}], 0.60)
	near(t, "team=x after pruning", l.LabelTotals(mins(200))["team=x"], 0.60)
	// What the store gets: the deletions and the totals.
	l2 := New(time.Hour)
	l2.CountLabels([]string{"team=x", "team=y"})
	reload(t, l, l2, map[string][]byte{})
	near(t, "total reloaded", l2.Totals(mins(200))[TypeKind{"s", Running}], 0.60)
	near(t, "team=x reloaded", l2.LabelTotals(mins(200))["team=x"], 0.60)
}

// An instance not yet probed after a restart ("" kind) keeps its span, and
// an unlisted cloud does not end instances.
func TestUnknownKeepsTheSpan(t *testing.T) {
	l := New(0)
	l.Observe(mins(0), []Sample{{ID: "i", Type: "s", Price: 0.60, Kind: Running, Containers: []string{"a"}}}, nil, true)
	l.Observe(mins(10), []Sample{{ID: "i", Type: "s", Price: 0.60}}, nil, false)
	l.Observe(mins(20), nil, nil, false)
	near(t, "a", l.Costs([]string{"a"}, mins(30))["a"], 0.30)
}

// reload moves what from has pending into the store (a map, read back in
// key order as bbolt does) and loads the store into to.
func reload(t *testing.T, from, to *Ledger, store map[string][]byte) {
	t.Helper()
	keys, values, err := from.PendingRecords()
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if values[i] == nil {
			delete(store, k)
		} else {
			store[k] = values[i]
		}
	}
	for _, k := range slices.Sorted(maps.Keys(store)) {
		if err := to.LoadRecord([]byte(k), store[k]); err != nil {
			t.Fatal(err)
		}
	}
}

// A long life is stored in chunks: a change rewrites the header and the
// last chunk only, and the whole reads back as it was.
func TestSpansStoredInChunks(t *testing.T) {
	l := New(0)
	store := map[string][]byte{}
	obs := func(at int) {
		on := []string{fmt.Sprint("c", at)}
		l.Observe(mins(at), []Sample{{ID: "i", Type: "s", Price: 0.60, Kind: Running, Containers: on}}, nil, true)
	}
	for at := range 150 {
		obs(at)
	}
	reload(t, l, New(0), store)
	obs(150)
	keys, _, err := l.PendingRecords()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if want := []string{"c/c150", chunkKey("i", 2)}; !slices.Equal(keys, want) {
		t.Errorf("one more span writes %v, want %v", keys, want)
	}
	l.Unwritten(keys)
	l2 := New(0)
	reload(t, l, l2, store)
	if len(l2.insts["i"].Spans) != 151 {
		t.Fatalf("read back %d spans, want 151", len(l2.insts["i"].Spans))
	}
	near(t, "c77", l2.Costs([]string{"c77"}, mins(200))["c77"], 0.01)
	near(t, "bill", l2.Report(Query{Now: mins(200)}).Bill, 2.00)
}

// A boot that ends between two passes is billed as boot up to when it
// ended, and the instance as idle from then, though no pass saw it
// booting; one found in a listing (never asked for here) starts at the
// pass that finds it.
func TestBootDatedByTheInstanceNotByThePass(t *testing.T) {
	l := New(0)
	l.Observe(mins(10), []Sample{{ID: "i", Type: "s", Price: 0.60, Kind: Running, Containers: []string{"a"}, Asked: mins(0), Booted: mins(4)}}, nil, true)
	l.Observe(mins(10), []Sample{{ID: "found", Type: "s", Price: 0.60, Kind: Idle}}, nil, true)
	l.Observe(mins(20), []Sample{
		{ID: "i", Type: "s", Price: 0.60, Kind: Running, Containers: []string{"a"}, Asked: mins(0), Booted: mins(4)},
		{ID: "found", Type: "s", Price: 0.60, Kind: Idle},
	}, nil, true)
	tot := l.Totals(mins(20))
	near(t, "boot", tot[TypeKind{"s", Boot}], 0.04)
	near(t, "idle", tot[TypeKind{"s", Idle}], 0.06+0.10) // i from 4 to 10, found from 10 to 20
	near(t, "running", tot[TypeKind{"s", Running}], 0.10)

	// Seen booting by a pass, then idle at the next: the boot ends when
	// the instance says, and a later pass repeating it changes nothing.
	l = New(0)
	l.Observe(mins(0), []Sample{{ID: "i", Type: "s", Price: 0.60, Kind: Boot, Asked: mins(0)}}, nil, true)
	for _, at := range []int{10, 20} {
		l.Observe(mins(at), []Sample{{ID: "i", Type: "s", Price: 0.60, Kind: Idle, Asked: mins(0), Booted: mins(3)}}, nil, true)
	}
	tot = l.Totals(mins(20))
	near(t, "boot seen", tot[TypeKind{"s", Boot}], 0.03)
	near(t, "idle seen", tot[TypeKind{"s", Idle}], 0.17)
}

// Asking the costs of containers the ledger does not know (a changes
// page of waiting ones, a thousand at a time) makes nothing; those it
// knows are still counted beside them.
func TestCostsOfUnknownContainersAllocateNothing(t *testing.T) {
	l := New(0)
	l.Observe(mins(0), []Sample{{ID: "i", Type: "s", Price: 0.60, Kind: Running, Containers: []string{"a"}}}, nil, true)
	l.Observe(mins(30), []Sample{{ID: "i", Type: "s", Price: 0.60, Kind: Running, Containers: []string{"a"}}}, nil, true)
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = fmt.Sprint("waiting-", i)
	}
	if n := testing.AllocsPerRun(20, func() { l.Costs(ids, mins(30)) }); n != 0 {
		t.Errorf("the costs of %d unknown containers made %.0f allocations, want none", len(ids), n)
	}
	near(t, "a among them", l.Costs(append(ids, "a"), mins(30))["a"], 0.30)
}
