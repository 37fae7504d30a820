// What the edge says of an output cut to [containers] max_output: the
// line the API puts first in a logs response and the console shows.

package view

import (
	"fmt"

	"dispatch-tui/engine/runner"
)

// TruncatedText says that an output's first dropped bytes were cut (over
// [containers] max_output).
func TruncatedText(dropped int64) string {
	return fmt.Sprintf("output truncated: its first %d bytes were dropped (over [containers] max_output)", dropped)
}

// TruncationNote is the line shown before an output whose first dropped
// bytes were cut: by the API at the top of a logs response, and so by the
// CLI and the console.
func TruncationNote(dropped int64) string {
	return "[dispatch-tui: " + TruncatedText(dropped) + "]\n"
}

// LogsText is out as logs shows it: TruncationNote first when something
// was dropped, then the output.
func LogsText(out runner.Output) []byte {
	if out.Dropped <= 0 {
		return out.Data
	}
	note := TruncationNote(out.Dropped)
	b := make([]byte, 0, len(note)+len(out.Data))
	return append(append(b, note...), out.Data...)
}
