package worker

import (
	"context"
	"maps"
	"testing"
	"time"

	"dispatch-tui/cloud"
)

// Tally and CountByType count what the lists list: instances in several
// states and behaviours, a create in flight, another dispatcher's
// instance.
func TestTallyCountsTheLists(t *testing.T) {
	h := newHarness(t, hopt{cfg: noIdleTimeout})
	h.step()
	a := h.createIdle("small")
	b := h.createIdle("large")
	if _, err := h.pool.SetIdleBehavior(a, IdleHold); err != nil {
		t.Fatal(err)
	}
	if err := h.pool.StartContainer(b, spec("c1", "sleep", "1000")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.drv.Create(context.Background(), cloud.InstanceType{Name: "small", ProviderType: "s1"},
		cloud.Tags{cloud.TagOwner: "elsewhere", cloud.TagInstanceType: "small"}); err != nil {
		t.Fatal(err)
	}
	h.until("another dispatcher's instance listed", 5*time.Minute, func() bool { return len(h.pool.ForeignInstances()) == 1 })
	gate := make(chan struct{})
	h.set.gate = gate
	if err := h.pool.Create("small"); err != nil {
		t.Fatal(err)
	}
	defer func() { close(gate); h.pool.Wait() }()

	want := Tally{States: map[State]int{}, Behaviors: map[IdleBehavior]int{}}
	byType := map[string]map[State]int{}
	for _, v := range h.pool.Instances(nil) {
		want.States[v.State]++
		want.Behaviors[v.IdleBehavior]++
		if v.State != StateShutdown {
			want.PricePerHour += v.Price
		}
		if byType[v.Type] == nil {
			byType[v.Type] = map[State]int{}
		}
		byType[v.Type][v.State]++
	}
	want.States[StateForeign] = len(h.pool.ForeignInstances())
	got := h.pool.Tally()
	if !maps.Equal(got.States, want.States) || !maps.Equal(got.Behaviors, want.Behaviors) || got.PricePerHour != want.PricePerHour {
		t.Fatalf("Tally = %+v, the lists count %+v", got, want)
	}
	if got.States[StateBooting] != 1 || got.States[StateRunning] != 1 || got.Behaviors[IdleHold] != 1 {
		t.Fatalf("Tally = %+v: the test did not make the instances it meant to (a create, one running, one held)", got)
	}
	gotTypes := h.pool.CountByType()
	if !maps.EqualFunc(gotTypes, byType, func(a, b map[State]int) bool { return maps.Equal(a, b) }) {
		t.Fatalf("CountByType = %v, the list counts %v", gotTypes, byType)
	}
}

// TestTallyWalksTheInstancesOnlyAfterAChange: the summary's count of a
// pool whose instances did not change is the count before, taken without
// walking them (every attached console asks every second); a change is
// counted at the next Tally.
func TestTallyWalksTheInstancesOnlyAfterAChange(t *testing.T) {
	h := newHarness(t, hopt{cfg: noIdleTimeout})
	h.step()
	a := h.createIdle("small")
	h.createIdle("small")
	h.run(30 * time.Second) // probed and listed again
	first := h.pool.Tally()
	walks := h.pool.tally.walks
	h.run(30 * time.Second)
	for range 10 {
		if got := h.pool.Tally(); !maps.Equal(got.States, first.States) || !maps.Equal(got.Behaviors, first.Behaviors) {
			t.Fatalf("Tally = %+v, then %+v with nothing changed", first, got)
		}
	}
	if got := h.pool.tally.walks - walks; got != 0 {
		t.Errorf("10 counts of an unchanged pool walked its instances %d times, want 0", got)
	}
	if _, err := h.pool.SetIdleBehavior(a, IdleHold); err != nil {
		t.Fatal(err)
	}
	if got := h.pool.Tally(); got.Behaviors[IdleHold] != 1 || got.Behaviors[IdleRun] != 1 {
		t.Errorf("after a hold, Tally = %+v, want one held, one run", got)
	}
}
