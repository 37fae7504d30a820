package launch

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dispatch-tui/engine/config"
)

// TestDaemonThatCannotStartLeavesNoState: a daemon refused at start (its
// port taken, an unsafe listener, a bad socket group) leaves no state dir
// behind, and nothing in one that existed.
func TestDaemonThatCannotStartLeavesNoState(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		name   string
		exists bool
		set    func(d *config.Dispatcher)
		want   string
	}{
		{"port taken, fresh dir", false, func(d *config.Dispatcher) { d.Listen, d.Token = taken.Addr().String(), "t" }, "listen on"},
		{"port taken, existing dir", true, func(d *config.Dispatcher) { d.Listen, d.Token = taken.Addr().String(), "t" }, "listen on"},
		{"no token", false, func(d *config.Dispatcher) { d.Listen = "127.0.0.1:1" }, "token"},
		{"unknown socket group", false, func(d *config.Dispatcher) { d.SocketGroup = "no-such-group-dtui" }, "no-such-group-dtui"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			if tc.exists {
				if err := os.Mkdir(state, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			cfg := e2eConfig(state)
			os.Remove(installedRunner(cfg)) // the test's own file, not the daemon's
			tc.set(&cfg.Dispatcher)
			err := RunDaemon(context.Background(), Options{Config: cfg, RunnerBinary: binary})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("RunDaemon: %v, want an error with %q", err, tc.want)
			}
			entries, statErr := os.ReadDir(state)
			switch {
			case !tc.exists && !os.IsNotExist(statErr):
				t.Fatalf("state dir left behind: %v %v", entries, statErr)
			case tc.exists && (statErr != nil || len(entries) != 0):
				t.Fatalf("state dir holds %v (%v), want it empty", entries, statErr)
			}
		})
	}
}

// TestHAConsoleRefused: a lone engine (the console's own) for a config
// asking for [ha] is refused, saying to run a daemon, before anything is
// written: it would lead beside the cluster's nodes without the lease.
func TestHAConsoleRefused(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	cfg := e2eConfig(state)
	cfg.HA.Enabled = true
	_, err := New(Options{Config: cfg, RunnerBinary: binary})
	if err == nil || !strings.Contains(err.Error(), "runs as a daemon (dispatch-tui --daemon)") {
		t.Fatalf("New with [ha] enabled: %v; want refused", err)
	}
	if _, statErr := os.Stat(state); !os.IsNotExist(statErr) {
		t.Fatalf("state dir left behind: %v", statErr)
	}
}
