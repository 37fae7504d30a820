package queue

import (
	"sync"
	"testing"
)

// Paging with EachFrom visits every container that exists throughout
// exactly once, while other goroutines submit batches (which may commit out
// of Seq order) and containers end and are dropped.
func TestEachFromPagesCoverEveryContainerOnce(t *testing.T) {
	e := newEnv(t, func(o *envOptions) { o.Store.NoSync = true })
	var before []string
	for range 10 {
		specs := make([]Spec, 50)
		for i := range specs {
			specs[i] = Spec{Command: []string{"true"}}
		}
		cs, err := e.q.SubmitBatch(specs, "test")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			before = append(before, c.ID)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := e.q.SubmitBatch([]Spec{{Command: []string{"true"}}, {Command: []string{"true"}}}, "test"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	seen := map[string]int{}
	from, pages := uint64(0), 0
	for {
		n := 0
		e.q.EachFrom(from, func(c *Container) bool {
			if c.Seq < from {
				t.Errorf("page from %d returned Seq %d", from, c.Seq)
			}
			seen[c.ID]++
			from = c.Seq + 1
			n++
			return n < 7
		})
		pages++
		if n == 0 || pages > 10000 {
			break
		}
		if pages == 20 {
			close(stop)
			wg.Wait()
		}
	}
	if pages <= 20 {
		close(stop)
		wg.Wait()
	}
	for _, id := range before {
		if seen[id] != 1 {
			t.Fatalf("container %s seen %d times", id, seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("container %s seen %d times", id, n)
		}
	}
	total, _ := e.q.Len()
	if len(seen) != total {
		t.Fatalf("pages saw %d containers, the queue has %d", len(seen), total)
	}
}
