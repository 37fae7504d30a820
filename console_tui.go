// Running the console's TUI until the user quits.

package main

import (
	"context"
	"os"

	"dispatch-tui/tui"
)

// runConsole runs the TUI on c until the user quits or ctx ends.
// --read-only or [tui] read_only removes the verbs; NO_COLOR (set and not
// empty) turns colour off.
func runConsole(ctx context.Context, c *console, f consoleFlags) error {
	return tui.Run(ctx, tui.Options{
		Backend:        c.backend,
		ReadOnly:       f.readOnly || c.cfg.TUI.ReadOnly || c.readOnly != "",
		ReadOnlyReason: c.readOnly,
		Refresh:        c.cfg.TUI.Refresh,
		KeyOverrides:   c.cfg.TUI.Keys,
		Theme:          c.cfg.TUI.Theme,
		NoColor:        os.Getenv("NO_COLOR") != "",
	})
}
