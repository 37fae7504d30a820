// Size sums that saturate instead of wrapping around.

package scheduler

import (
	"math"

	"dispatch-tui/engine/queue"
)

// Sizes come from users, and a reserve or the use of other containers is
// added to them: a sum that overflowed would wrap around to a small or
// negative number and make a huge container fit the smallest type. These
// sums saturate instead, so a huge size stays huge and fits nothing.

// addSize returns a+b, or the int64 nearest to it when that overflows.
func addSize(a, b int64) int64 { return addSaturating(a, b, math.MinInt64, math.MaxInt64) }

// addCount returns a+b, or the int nearest to it when that overflows.
func addCount(a, b int) int { return addSaturating(a, b, math.MinInt, math.MaxInt) }

// addSaturating returns a+b, or lo or hi (T's bounds) when that overflows.
func addSaturating[T int | int64](a, b, lo, hi T) T {
	s := a + b
	switch {
	case b > 0 && s < a:
		return hi
	case b < 0 && s > a:
		return lo
	}
	return s
}

// addConstraints returns the resources of a and b together, saturating.
func addConstraints(a, b queue.Constraints) queue.Constraints {
	return queue.Constraints{
		VCPUs:   addCount(a.VCPUs, b.VCPUs),
		RAM:     addSize(a.RAM, b.RAM),
		Scratch: addSize(a.Scratch, b.Scratch),
		GPUs:    addCount(a.GPUs, b.GPUs),
	}
}
