package queue

import (
	"dispatch-tui/engine/view"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// BenchmarkSortChurn times sortLocked alone after the churn of
// BenchmarkSchedulerPassChurn (engine/scheduler): 1 % of the queue
// re-prioritised, 1,000 submitted, 1,000 started (the head of the queue)
// and 1,000 ended, on an in-memory queue laid out as seedFile's. It shows
// what the order costs without the rest of the pass's noise.
func BenchmarkSortChurn(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("queued=%d", n), func(b *testing.B) {
			q := &Queue{counts: map[State]int{}}
			var live, running []*Container
			add := func(c *Container) {
				q.counts[c.State]++
				q.markMovedLocked(c)
				live = append(live, c)
				if c.State == Running {
					running = append(running, c)
				}
			}
			for i := range n {
				c := &Container{Priority: i % 5, State: Queued, FirstSeenAt: t0.Add(time.Duration(i%1000) * time.Second), ContainerTail: view.ContainerTail{Seq: uint64(i)}}
				switch i % 100 {
				case 0:
					c.State = Running
				case 1:
					c.State = Locked
				}
				add(c)
			}
			q.unsorted = true
			q.sortLocked()
			rng := rand.New(rand.NewPCG(1, 2))
			seq := uint64(n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for k := 0; k < n/100; {
					j := rng.IntN(len(live))
					c := live[j]
					if c.State.Final() {
						live[j] = live[len(live)-1]
						live = live[:len(live)-1]
						continue
					}
					c.Priority = 1 + rng.IntN(5)
					q.markMovedLocked(c)
					k++
				}
				now := t0.Add(time.Duration(1000+i) * time.Second)
				for range 1000 {
					add(&Container{Priority: 1 + rng.IntN(5), State: Queued, FirstSeenAt: now, ContainerTail: view.ContainerTail{Seq: seq}})
					seq++
				}
				started := 0
				for _, c := range q.active {
					if started == 1000 {
						break
					}
					if c.State == Queued {
						q.setStateLocked(c, Running)
						running = append(running, c)
						started++
					}
				}
				for _, c := range running[:1000] {
					q.setStateLocked(c, Complete)
				}
				running = running[1000:]
				runtime.GC() // as the scheduler benchmark: the churn's garbage is not the sort's
				b.StartTimer()
				q.sortLocked()
				b.StopTimer()
				clear(q.finished)
				q.finished = q.finished[:0]
				b.StartTimer()
			}
		})
	}
}
