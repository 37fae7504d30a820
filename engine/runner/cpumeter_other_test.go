//go:build !unix

package runner

import "testing"

// cpuMeter: without getrusage, the benchmarks report wall time only.
func cpuMeter(b *testing.B) (stop func()) { return func() {} }
