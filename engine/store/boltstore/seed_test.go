// Seeding large stores for the benchmarks, straight through the Store.

package boltstore

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store"
	"dispatch-tui/engine/view"
)

// appendSeedRecord appends the JSON of seeded container seq, at priority
// prio, to buf: a mix of states, shapes and first-seen times.
func appendSeedRecord(tb testing.TB, buf []byte, seq uint64, prio int) []byte {
	tb.Helper()
	i := int(seq)
	c := queue.Container{
		ContainerBody: view.ContainerBody{
			ID:            fmt.Sprintf("c-%010d", i),
			Command:       []string{"run", "job"},
			MaxAttempts:   3,
			RestartPolicy: queue.RestartNever,
			CreatedAt:     t0.Add(time.Duration(i%1000) * time.Second),
		},
		RuntimeConstraints: queue.Constraints{VCPUs: 1 + i%8, RAM: int64(1+i%16) << 30},
		Priority:           prio,
		State:              queue.Queued,
		FirstSeenAt:        t0.Add(time.Duration(i%1000) * time.Second),
		ContainerTail: view.ContainerTail{
			Seq: seq,
		},
	}
	c.Name = c.ID
	switch {
	case i%100 == 0:
		c.State, c.InstanceID, c.InstanceType, c.Attempts = queue.Running, "i-1", "t", 1
	case i%100 == 1:
		c.State, c.InstanceType = queue.Locked, "t"
	}
	j, err := json.Marshal(&c)
	if err != nil {
		tb.Fatal(err)
	}
	return append(buf, j...)
}

// openSeeded opens a store (at path, else in a temporary directory),
// without sync, holding n seeded containers in its containers bucket and
// an empty journal, loaded; it is closed when tb ends.
func openSeeded(tb testing.TB, n int, path ...string) *Store {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "queue.db")
	if len(path) > 0 {
		p = path[0]
	}
	s, err := Open(Options{Path: p, NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := s.Load(1, store.RecordFunc(decodeSeq), noEvent); err != nil {
		tb.Fatal(err)
	}
	var b store.Batch
	for seq := range uint64(n) {
		b.EndRecord(appendSeedRecord(tb, b.BeginRecord(seq), seq, int(seq%5)))
	}
	if err := s.Submit(&b); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		s.stopFolder()
		s.db.Close()
	})
	return s
}

// reopenSeeded seeds a store of n containers at opts.Path (openSeeded),
// opens it again with opts and loads it: a store as a daemon restarted on
// such a file holds it. It is closed when tb ends, if not before.
func reopenSeeded(tb testing.TB, n int, opts Options) *Store {
	tb.Helper()
	if err := openSeeded(tb, n, opts.Path).db.Close(); err != nil {
		tb.Fatal(err)
	}
	s, err := Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() }) // a second Close of a test's own does nothing
	if _, err := s.Load(1, store.RecordFunc(decodeSeq), noEvent); err != nil {
		tb.Fatal(err)
	}
	return s
}

// decodeSeq is a Load's record function that reads a record's Seq and id
// alone.
func decodeSeq(body []byte) (uint64, string, error) {
	var c struct {
		ID  string `json:"id"`
		Seq uint64 `json:"seq"`
	}
	err := json.Unmarshal(body, &c)
	return c.Seq, c.ID, err
}

// noEvent is a Load's event function that keeps nothing.
func noEvent(uint64, []byte) error { return nil }

// openQueue opens a queue on a new store with sopts, on clk, closed when
// tb ends.
func openQueue(tb testing.TB, sopts Options, clk *clock.Fake) *queue.Queue {
	tb.Helper()
	s, err := Open(sopts)
	if err != nil {
		tb.Fatal(err)
	}
	q, err := queue.Open(queue.Options{Store: s, Clock: clk})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { q.Close() })
	return q
}
