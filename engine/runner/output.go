// Output limits: how a container's output is cut to a byte limit, the same
// way by every runner, and how much of it one runner call may return.

package runner

import "time"

// OutputCutUnit is the grain of a cut: an output over its limit loses a
// whole number of KiB from its start, so what was dropped is exact and
// still fits a 32-bit count of KiB in a container's record.
const OutputCutUnit = 1 << 10

// MaxOutputLimit is the largest max_bytes a logs request may carry (and
// the largest [containers] max_output): a reply of that much, in base64,
// beside MaxBatchOutput of other replies, stays under the SSH executor's
// 64 MiB cap on what one call returns.
const MaxOutputLimit = 32 << 20

// MaxBatchOutput is how much output the logs replies of one batch (or
// serve frame) carry before the runner defers the rest of its logs
// requests (CodeDeferred): a forget batch of 256 outputs near their limit
// would otherwise be one reply of gigabytes.
const MaxBatchOutput = 8 << 20

// CodeDeferred is the code of a logs reply the runner did not run because
// the batch's replies already carry MaxBatchOutput: not an error, ask
// again in another call.
const CodeDeferred = 75

// Output is a container's output as a logs call returns it: Data, the
// output (or its last lines), after Dropped bytes cut from its start
// because the whole was over the call's max_bytes.
type Output struct {
	Data    []byte
	Dropped int64
	// Started is when the run this is the output of started, as its
	// runner listed it: set by the pool on an output it hands over to be
	// stored (never sent by a runner), so that the store tells one
	// attempt's run from another's. Zero: unknown.
	Started time.Time
}

// DroppedFor returns how many bytes at the start of an output of total
// bytes are cut so that at most limit remain: none when limit <= 0 or the
// output fits, else the least whole number of OutputCutUnit that does.
func DroppedFor(total, limit int64) int64 {
	if limit <= 0 || total <= limit {
		return 0
	}
	over := total - limit
	return min(total, (over+OutputCutUnit-1)/OutputCutUnit*OutputCutUnit)
}

// Cut returns o with at most limit bytes of Data left, cut from its start
// as a runner cuts (Dropped grows by what it drops); o itself when it
// fits. A runner that honours max_bytes never needs it: it is the
// dispatcher's guard that what it keeps stays bounded.
func (o Output) Cut(limit int64) Output {
	n := DroppedFor(int64(len(o.Data)), limit)
	if n == 0 {
		return o
	}
	return Output{Data: o.Data[n:], Dropped: o.Dropped + n, Started: o.Started}
}

// TailLines returns the last n lines of b (all of b when n <= 0).
func TailLines(b []byte, n int) []byte {
	if n <= 0 {
		return b
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if b[i] == '\n' {
			n--
			if n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}
