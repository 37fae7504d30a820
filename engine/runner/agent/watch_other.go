//go:build unix && !linux

// "runner watch" where there is no inotify: it says it is ready and
// announces nothing, so that exits are found by the probe's list, as
// before there were notices (docs/design.md §7.3).

package agent

import (
	"fmt"
	"io"

	"dispatch-tui/engine/runner"
)

// announceExit does nothing: nobody can watch for it here.
func announceExit(string) {}

// watch waits for the end of stdin without announcing anything.
func (a *agent) watch(stdin io.Reader) int {
	if _, err := fmt.Fprintln(a.stdout, runner.WatchReady); err != nil {
		return a.fail(1, "runner watch: %v", err)
	}
	if stdin != nil {
		_, _ = io.Copy(io.Discard, stdin)
	}
	return 0
}
