package tui

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"dispatch-tui/engine/view"
	"dispatch-tui/tui/backend"
)

// BenchmarkSortMillion is one sort key pressed on a table of 1,000,000
// containers (each op sorts by the column anew, alternating the
// direction), on the console's own goroutine as a job would run it: of
// mixed rows, and of a queue at quota, every row waiting its turn
// ("position N in queue"), as the acceptance's daemon holds them:
//
//	GOGC=25 go test -run='^$' -bench='^BenchmarkSortMillion$' -benchtime=10x ./tui/
func BenchmarkSortMillion(b *testing.B) {
	queues := []struct {
		name string
		make func() []view.Container
	}{
		{"mixed", func() []view.Container { return mixedContainers(rand.New(rand.NewPCG(32, 4)), *filterRows) }},
		{"at-quota", func() []view.Container { return queueAtQuota(*filterRows) }},
		{"long-names", func() []view.Container {
			cs := queueAtQuota(*filterRows)
			for i := range cs {
				cs[i].Name = fmt.Sprintf("etl-pipeline-customer-data-shard-%07d", (i*7919)%len(cs))
			}
			return cs
		}},
	}
	for _, q := range queues {
		rows := backend.NewRows(q.make(), nil)
		for _, key := range []string{"P", "N", "R"} {
			b.Run(fmt.Sprintf("queue=%s/key=%s", q.name, key), func(b *testing.B) {
				tb := filterTable(rows, false)
				tb.Shown()
				loopWithCPU(b, func() {
					tb.SortBy(key)
					tb.Shown()
				}, nil)
			})
		}
	}
}

// queueAtQuota is n containers waiting their turn, in submission order.
func queueAtQuota(n int) []view.Container {
	cs := make([]view.Container, n)
	for i := range cs {
		c := &cs[i]
		c.ID, c.Name = fmt.Sprintf("c-%07d", i), fmt.Sprintf("job-%d", i)
		c.State, c.Priority, c.Seq = view.Queued, 1+i%5, uint64(i+1)
		c.CreatedAt, c.FirstSeenAt = t0.Add(time.Duration(i)*time.Millisecond), t0
		c.ReasonCode, c.Pending = view.ReasonPosition, view.Pending{Code: view.ReasonPosition, N: i + 1}
		c.Reason = c.Pending.Text()
	}
	return cs
}
