package queue

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"dispatch-tui/engine/clock"
)

// BenchmarkEventsFromFile reads pages of events older than those kept in
// memory, from a log written as a scheduler writes it: passes of 1,000
// events with a few single verbs between them.
func BenchmarkEventsFromFile(b *testing.B) {
	q, err := Open(Options{Path: filepath.Join(b.TempDir(), "q.db"), Clock: clock.NewFake(time.Unix(0, 0)), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	const passes, perPass, verbs = 50, 1000, 20
	for p := range passes {
		for i := range perPass {
			q.AppendEvent("scheduler", "state", fmt.Sprintf("c-%016x", p*perPass+i), "Running", "")
		}
		if err := q.Flush(); err != nil {
			b.Fatal(err)
		}
		for range verbs {
			if err := q.AddEvent("operator:alice", "verb", "c-0000000000000000", "priority", "why not"); err != nil {
				b.Fatal(err)
			}
		}
	}
	total := uint64(passes * (perPass + verbs))
	for _, limit := range []int{100, 1000} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				since := (i * 7919) % (total - 2000)
				i++
				evs, err := q.Events(since, limit)
				if err != nil || len(evs) != limit || evs[0].Seq != since+1 {
					b.Fatalf("Events(%d, %d): %d events, %v", since, limit, len(evs), err)
				}
			}
		})
	}
}
