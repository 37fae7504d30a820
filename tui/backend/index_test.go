package backend

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The index by id finds what a map from id to slot would, through puts,
// moves and deletions in any order (deletions move later entries back,
// across the table's end too), and grows from empty.
func TestIndexAsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 3))
	for _, start := range []int{0, 50} {
		var ps pages
		x := index{}
		if start > 0 {
			x = newIndex(start)
		}
		want := map[string]int32{}
		for op := range 20000 {
			switch k := rng.IntN(10); {
			case k < 5 || len(want) == 0: // a new row
				id := fmt.Sprintf("c-%d", op)
				ps.push(Row{ID: id})
				x.put(&ps, id, int32(ps.len()-1))
				want[id] = int32(ps.len() - 1)
			case k < 8: // a row taken out
				for id := range want {
					x.del(&ps, id)
					delete(want, id)
					break
				}
			default: // a row moved to a new slot
				for id := range want {
					ps.push(Row{ID: id})
					x.put(&ps, id, int32(ps.len()-1))
					want[id] = int32(ps.len() - 1)
					break
				}
			}
			if op%997 != 0 {
				continue
			}
			if x.len() != len(want) {
				t.Fatalf("after %d operations: %d ids indexed, want %d", op, x.len(), len(want))
			}
			for id, i := range want {
				if got, ok := x.get(&ps, id); !ok || got != i {
					t.Fatalf("after %d operations: %s at %d (%v), want %d", op, id, got, ok, i)
				}
			}
			if _, ok := x.get(&ps, "c-none"); ok {
				t.Fatal("an id never put was found")
			}
		}
	}
}
