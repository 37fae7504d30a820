// The doubling back-off every retry of the engine waits by.

package clock

import "time"

// Backoff is the wait before the next try after the n-th failure in a
// row: first, doubled with each failure after the first, at most max.
func Backoff(first, max time.Duration, n int) time.Duration {
	d := first
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
