package boltstore

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
	q := openQueue(b, Options{Path: filepath.Join(b.TempDir(), "q.db"), NoSync: true}, clock.NewFake(time.Unix(0, 0)))
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

// BenchmarkFlushEvents is the event part of a churning pass's flush: 3,000
// events (a thousand completions and starts) written to a log that
// already holds 100 such passes.
func BenchmarkFlushEvents(b *testing.B) {
	q := openQueue(b, Options{Path: filepath.Join(b.TempDir(), "q.db"), NoSync: true}, clock.NewFake(time.Unix(0, 0)))
	const perPass = 3000
	n := 0
	add := func() {
		for range perPass {
			q.AppendEvent("scheduler", "state", fmt.Sprintf("c-%016x", n), "Running", "")
			n++
		}
	}
	for range 100 {
		add()
		if err := q.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	var cpu time.Duration
	passes := 0
	for b.Loop() {
		b.StopTimer()
		add()
		b.StartTimer()
		cpu0 := cpuTime()
		if err := q.Flush(); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - cpu0
		passes++
	}
	b.ReportMetric(float64(cpu)/float64(passes), "cpu-ns/op")
}
