package queue

import (
	"slices"
	"testing"
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
