package queue

import (
	"fmt"
	"path/filepath"
	"syscall"
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

// BenchmarkFlushEvents is the event part of a churning pass's flush: 3,000
// events (a thousand completions and starts) written to a log that
// already holds 100 such passes.
func BenchmarkFlushEvents(b *testing.B) {
	q, err := Open(Options{Path: filepath.Join(b.TempDir(), "q.db"), Clock: clock.NewFake(time.Unix(0, 0)), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
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
		cpu0 := processCPU()
		if err := q.Flush(); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - cpu0
		passes++
	}
	b.ReportMetric(float64(cpu)/float64(passes), "cpu-ns/op")
}

// processCPU is the CPU time (user and system, all threads) the process
// has used: on a shared machine it says more than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
