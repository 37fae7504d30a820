package pgstore

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store"
	"dispatch-tui/engine/view"
)

// BenchmarkOpenQueue times a start-up on PostgreSQL: a queue opened on a
// store of 100,000 containers (every record loaded and decoded, the
// index built), until the engine could run its first pass.
func BenchmarkOpenQueue(b *testing.B) {
	const n = 100_000
	url := pgtest.NewDatabase(b)
	s, err := Open(Options{URL: url, Timeout: 10 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	var batch store.Batch
	for seq := range uint64(n) {
		c := queue.Container{
			ContainerBody: view.ContainerBody{
				ID:            fmt.Sprintf("c-%016x", seq),
				Name:          fmt.Sprint("job-", seq),
				Command:       []string{"run", "job"},
				MaxAttempts:   3,
				RestartPolicy: queue.RestartNever,
				CreatedAt:     time.Unix(int64(seq), 0).UTC(),
			},
			RuntimeConstraints: queue.Constraints{VCPUs: 1 + int(seq%8), RAM: int64(1+seq%16) << 30},
			Priority:           int(seq % 5),
			State:              queue.Queued,
			FirstSeenAt:        time.Unix(int64(seq), 0).UTC(),
			ContainerTail: view.ContainerTail{
				Seq: seq,
			},
		}
		j, err := json.Marshal(&c)
		if err != nil {
			b.Fatal(err)
		}
		batch.EndRecord(append(batch.BeginRecord(seq), j...))
	}
	if err := s.Submit(&batch); err != nil {
		b.Fatal(err)
	}
	s.Close()
	for b.Loop() {
		s, err := Open(Options{URL: url, Timeout: 10 * time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		q, err := queue.Open(queue.Options{Store: s, Clock: clock.NewFake(time.Unix(0, 0))})
		if err != nil {
			b.Fatal(err)
		}
		if total, _ := q.Len(); total != n {
			b.Fatalf("loaded %d containers, want %d", total, n)
		}
		b.StopTimer()
		q.Close()
		b.StartTimer()
	}
}
