package queue

import (
	"dispatch-tui/engine/view"
	"math"
	"slices"
	"testing"
	"time"
)

// Each visits final containers in a stable order — containers that end
// later come after those already listed — so paging through a list neither
// repeats nor skips rows.
func TestEachOrderOfFinalContainersIsStable(t *testing.T) {
	e := newEnv(t, nil)
	var ids []string
	for i := 0; i < 40; i++ {
		ids = append(ids, e.submit(Spec{Command: []string{"true"}}).ID)
	}
	walk := func() []string {
		var out []string
		e.q.Each(func(c *Container) bool {
			if c.State.Final() {
				out = append(out, c.ID)
			}
			return true
		})
		return out
	}
	for _, id := range ids[:20] {
		if _, err := e.q.Kill(id, "test", ""); err != nil {
			t.Fatal(err)
		}
	}
	first := walk()
	for i := 0; i < 5; i++ {
		if got := walk(); !slices.Equal(got, first) {
			t.Fatalf("walk %d: order changed:\n%v\n%v", i, got, first)
		}
	}
	for _, id := range ids[20:] {
		if _, err := e.q.Kill(id, "test", ""); err != nil {
			t.Fatal(err)
		}
	}
	if got := walk(); len(got) != 40 || !slices.Equal(got[:20], first) {
		t.Fatalf("containers that ended later did not come after the others: %v", got)
	}
	e.q = e.reopen()
	if got := walk(); !slices.Equal(got, ids) {
		t.Fatalf("after reopen: order %v, want submission order %v", got, ids)
	}
}

// Packed keys order containers as comparePlaced does, also at and beyond
// the edges of the ranges each field keeps exactly (where equal keys leave
// the order to the records).
func TestOrderKeyAgreesWithComparePlaced(t *testing.T) {
	ns := func(n int64) time.Time { return time.Unix(fsEpoch, 0).Add(time.Duration(n)) }
	prios := []int{math.MinInt, -1, 0, 1, 2, prioMax - 3, prioMax - 2, prioMax - 1, prioMax, 1 << 40, math.MaxInt}
	times := []time.Time{{}, ns(-2), ns(-1), ns(0), ns(1), t0, t0.Add(1), ns(fsMax - 3), ns(fsMax - 2), ns(fsMax - 1), ns(fsMax), ns(math.MaxInt64), time.Unix(fsEpoch+fsMax/1_000_000_000, 0), time.Date(2700, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)}
	seqs := []uint64{0, 1, seqMax - 1, seqMax, seqMax + 1, math.MaxUint64}
	var cs []*Container
	for r := range int8(3) {
		for _, p := range prios {
			for _, fs := range times {
				for _, s := range seqs {
					cs = append(cs, &Container{ord: orderSlot{rank: r, placed: true}, pend: pendingRec{ordPrio: clamp32(p)}, FirstSeenAt: fs, ContainerTail: view.ContainerTail{Seq: s}})
				}
			}
		}
	}
	keys := make([]orderKey, len(cs))
	for i, c := range cs {
		keys[i] = placedKey(c)
	}
	for i, a := range cs {
		for j, b := range cs {
			if got, want := compareKeyed(keyed{keys[i], a}, keyed{keys[j], b}), comparePlaced(a, b); got != want {
				t.Fatalf("rank %d prio %d first seen %v seq %d vs rank %d prio %d first seen %v seq %d: keys compare %d, records %d",
					a.ord.rank, a.pend.ordPrio, a.FirstSeenAt, a.Seq, b.ord.rank, b.pend.ordPrio, b.FirstSeenAt, b.Seq, got, want)
			}
		}
	}
}
