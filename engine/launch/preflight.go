// The checks before a daemon writes anything: listener safety, address free, socket unused.

package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/config"
)

// preflight checks, before anything is written to the state dir, what
// would make Serve fail for reasons outside it: an unsafe listener, a TCP
// address taken, another dispatcher on the socket. A daemon that cannot
// serve should leave nothing behind.
func preflight(d *config.Dispatcher) error {
	if d.Listen != "" {
		host, _, err := net.SplitHostPort(d.Listen)
		if err != nil {
			return fmt.Errorf("dispatcher.listen %q: %w", d.Listen, err)
		}
		useTLS := d.TLS == "on" || d.TLS == "auto" && !api.IsLoopback(host)
		if err := api.CheckListen(d.Listen, len(d.APITokens()), useTLS); err != nil {
			return err
		}
		ln, err := net.Listen("tcp", d.Listen)
		if err != nil {
			return fmt.Errorf("listen on %s (dispatcher.listen): %w", d.Listen, err)
		}
		ln.Close()
	}
	if c, err := net.DialTimeout("unix", d.SocketPath(), time.Second); err == nil {
		c.Close()
		return fmt.Errorf("another dispatcher is serving on %s (same state_dir)", d.SocketPath())
	}
	return nil
}

// UndoFreshStateDir returns a function that removes the state dir if it
// does not exist now: what a daemon or console that failed to start
// created.
func UndoFreshStateDir(dir string) func() {
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return func() {}
	}
	return func() { os.RemoveAll(dir) }
}
