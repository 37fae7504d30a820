// Which passes are written before their starts go out (RecordStartsFirst).

package scheduler

import (
	"testing"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// On the embedded store (RecordStartsFirst without all) a pass that starts
// a container for the first time sends it before its write; one that
// starts a container again (its earlier attempt requeued) is written
// first, so that a crash cannot leave a run of it that its record does
// not count. With all (PostgreSQL) every pass with starts is written first.
func TestStartAgainIsWrittenBeforeItIsSent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		again bool // the container had an attempt before
		all   bool
		// wantFirst: the pass's write came before its start.
		wantFirst bool
	}{
		{"first attempt", false, false, false},
		{"second attempt", true, false, true},
		{"first attempt, every start recorded first", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk, q, cfg, c := oneContainer(t)
			if tc.again {
				err := q.Pass(func(tx *queue.Tx) {
					c := tx.Get(c.ID)
					if err := tx.Lock(c, benchTypes[0].Name); err != nil {
						t.Fatal(err)
					}
					if err := tx.Run(c, "i-0", benchTypes[0].Name); err != nil {
						t.Fatal(err)
					}
					if err := tx.Requeue(c, "exit code 1, retrying"); err != nil {
						t.Fatal(err)
					}
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			typ := benchTypes[0]
			pool := &stubPool{probed: true, quota: 4, views: []worker.InstanceView{{
				Instance: view.Instance{ID: cloud.InstanceID("i-1"), Type: typ.Name, ProviderType: typ.ProviderType, Price: typ.Price,
					State: worker.StateIdle, IdleBehavior: worker.IdleRun},
				ListedAt: clk.Now(),
			}}}
			s := New(cfg, q, pool, clk, nil)
			var written []int // starts sent when each early write came
			s.RecordStartsFirst(func() error {
				written = append(written, len(pool.started))
				return q.FlushPass()
			}, tc.all)
			s.RunPass()
			if len(pool.started) != 1 {
				t.Fatalf("%d starts sent, want 1", len(pool.started))
			}
			first := len(written) == 1 && written[0] == 0
			if first != tc.wantFirst || len(written) > 1 {
				t.Fatalf("writes before the pass ended, with the starts sent then: %v; want the write first: %v", written, tc.wantFirst)
			}
			want := 1
			if tc.again {
				want = 2
			}
			if got, _ := q.Get(c.ID); got.State != queue.Running || got.Attempts != want {
				t.Fatalf("container %s, attempt %d after the pass; want Running, attempt %d", got.State, got.Attempts, want)
			}
		})
	}
}
