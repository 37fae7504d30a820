package queue

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"dispatch-tui/engine/store"
	"dispatch-tui/engine/store/boltstore"
	"dispatch-tui/engine/view"
)

// seedFile writes n active containers straight into a new store file (one
// transaction), in a mix of states, priorities and first-seen times, so a
// large queue can be opened without n durable submits.
func seedFile(tb testing.TB, path string, n int) {
	tb.Helper()
	s, err := boltstore.Open(boltstore.Options{Path: path, NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	load(tb, s)
	var b store.Batch
	err = func() error {
		for i := range n {
			c := Container{
				ContainerBody: view.ContainerBody{
					ID:            fmt.Sprintf("c-%010d", i),
					Command:       []string{"run", "job"},
					MaxAttempts:   3,
					RestartPolicy: RestartNever,
					CreatedAt:     t0.Add(time.Duration(i%1000) * time.Second),
				},
				RuntimeConstraints: Constraints{VCPUs: 1 + i%8, RAM: int64(1+i%16) << 30},
				Priority:           i % 5,
				State:              Queued,
				FirstSeenAt:        t0.Add(time.Duration(i%1000) * time.Second),
				ContainerTail: view.ContainerTail{
					Seq: uint64(i),
				},
			}
			c.Name = c.ID
			switch {
			case i%100 == 0:
				c.State, c.InstanceID, c.InstanceType, c.Attempts = Running, "i-1", "t", 1
			case i%100 == 1:
				c.State, c.InstanceType = Locked, "t"
			}
			body, err := json.Marshal(&c)
			if err != nil {
				return err
			}
			b.EndRecord(append(b.BeginRecord(c.Seq), body...))
		}
		return s.Submit(&b)
	}()
	if err != nil {
		tb.Fatal(err)
	}
}

func openSeeded(tb testing.TB, n int) *Queue {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "queue.db")
	seedFile(tb, path, n)
	q, err := openOnPath(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { q.Close() })
	if total, active := q.Len(); total != n || active != n {
		tb.Fatalf("seeded Len = %d, %d", total, active)
	}
	return q
}

// noChangePass is a read-only scheduler pass: it reads the fields a pass
// looks at and sets every container's pending reason.
func noChangePass(tx *Tx) {
	pos := 0
	var ram int64
	for i, c := range tx.Active() {
		ram += c.RuntimeConstraints.RAM
		if c.State != Queued || c.Held || c.Priority == 0 {
			continue
		}
		pos++
		tx.SetPendingAt(i, c, Pending{Code: ReasonPosition, N: pos})
	}
	if ram < 0 {
		panic("unreachable")
	}
}

// A pass that changes no record allocates (almost) nothing, however many
// containers it walks.
func TestPassNoChangeAllocs(t *testing.T) {
	q := openSeeded(t, 5000)
	if err := q.Pass(noChangePass); err != nil { // sorts once
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if err := q.Pass(noChangePass); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Fatalf("a no-change pass over 5000 containers allocates %.0f times", allocs)
	}
}

func BenchmarkSubmit(b *testing.B) {
	path := filepath.Join(b.TempDir(), "queue.db")
	q, err := openOnPath(path)
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	s := Spec{
		Command:            []string{"run", "job"},
		Env:                map[string]string{"A": "1"},
		RuntimeConstraints: Constraints{VCPUs: 2, RAM: 4 << 30},
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := q.Submit(s, "bench"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkPassNoChange(b *testing.B) {
	const n = 100_000
	q := openSeeded(b, n)
	if err := q.Pass(noChangePass); err != nil { // the first pass sorts the loaded records
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := q.Pass(noChangePass); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkViewsPage is Views of one page of 10,000 of 100,000 waiting
// containers in submission order, as a paged list (ContainersFrom) takes
// them: each view finds its pending reason beside the order.
func BenchmarkViewsPage(b *testing.B) {
	const n, page = 100_000, 10_000
	q := openSeeded(b, n)
	if err := q.Pass(noChangePass); err != nil {
		b.Fatal(err)
	}
	var cs []*Container
	q.EachFrom(uint64(n/2), func(c *Container) bool {
		cs = append(cs, c)
		return len(cs) < page
	})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if vs := q.Views(cs); len(vs) != page {
			b.Fatalf("%d views", len(vs))
		}
	}
}

// BenchmarkStoreLogs: storing the outputs of one runner batch of 256
// forgets, one StoreLogsBatch of one each from concurrent goroutines (as the pool did)
// or one StoreLogsBatch.
func BenchmarkStoreLogs(b *testing.B) {
	const n = 256
	q := openSeeded(b, n)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("c-%010d", i) // seedFile's
	}
	outs := make([][]byte, n)
	for i := range outs {
		outs[i] = []byte("some output\n")
	}
	b.Run("each", func(b *testing.B) {
		for b.Loop() {
			var wg sync.WaitGroup
			for i := range ids {
				wg.Go(func() {
					if err := q.StoreLogsBatch([]string{ids[i]}, [][]byte{outs[i]}); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
		}
	})
	b.Run("batch", func(b *testing.B) {
		for b.Loop() {
			if err := q.StoreLogsBatch(ids, outs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
