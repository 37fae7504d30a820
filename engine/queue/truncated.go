// TruncatedOutput: how much of a container's stored output was cut, kept
// in four bytes of its record, and how it is set.

package queue

import (
	"fmt"
	"math"
	"strconv"

	"dispatch-tui/engine/runner"
)

// TruncatedOutput is how many bytes were cut from the start of a stored
// output, counted in runner.OutputCutUnit (runners cut in whole KiB):
// four bytes, where a record had room for no more (TestContainerLayout),
// that count up to 4 TiB. Its JSON (the API's, the store's) is the bytes.
type TruncatedOutput uint32

// TruncatedBytes is the TruncatedOutput of n bytes cut, rounded up to
// whole units (never 0 for n > 0) and at most the largest it can hold.
func TruncatedBytes(n int64) TruncatedOutput {
	if n <= 0 {
		return 0
	}
	u := (n + runner.OutputCutUnit - 1) / runner.OutputCutUnit
	return TruncatedOutput(min(u, math.MaxUint32))
}

// Bytes is how many bytes were cut.
func (t TruncatedOutput) Bytes() int64 { return int64(t) * runner.OutputCutUnit }

// MarshalJSON writes the bytes cut.
func (t TruncatedOutput) MarshalJSON() ([]byte, error) {
	return strconv.AppendInt(nil, t.Bytes(), 10), nil
}

// UnmarshalJSON reads the bytes cut.
func (t *TruncatedOutput) UnmarshalJSON(b []byte) error {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("logs_truncated: want a number of bytes >= 0, got %s", b)
	}
	*t = TruncatedBytes(n)
	return nil
}

// SetLogsTruncated records how many bytes were cut from the start of the
// output of a container's finished attempt (0: none) and reports whether
// that changed the record; written with the next flush, as SetLogsError.
func (q *Queue) SetLogsTruncated(id string, n int64) bool {
	t := TruncatedBytes(n)
	return q.setOutputNote(id, func(c *Container) bool {
		if c.LogsTruncated == t {
			return false
		}
		c.LogsTruncated = t
		return true
	})
}
