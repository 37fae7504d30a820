//go:build unix

package runner

import (
	"syscall"
	"testing"
)

// cpuMeter reports the CPU time of this process (all its threads, the
// garbage collector's too) per op as cpu-ns/op: on a loaded machine wall
// time also counts the time spent waiting for a core.
func cpuMeter(b *testing.B) (stop func()) {
	cpu := func() int64 {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return ru.Utime.Nano() + ru.Stime.Nano()
	}
	b.ResetTimer()
	start := cpu()
	return func() {
		b.StopTimer()
		b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
	}
}
