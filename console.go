// The console's three modes (in-process engine, --connect, --demo) and how each starts.

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/api/cli"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/launch"
	"dispatch-tui/engine/simulate"
	"dispatch-tui/tui/backend"
)

// consoleFlags are the command-line settings of the three console modes:
// in-process engine (default), --connect URL and --demo.
type consoleFlags struct {
	configPath string
	connect    string
	token      string
	pin        string // --tls-fingerprint
	demo       bool
	readOnly   bool
}

// console is a backend ready for the TUI and how to take it down.
type console struct {
	backend backend.Backend
	cfg     *config.Config // its [tui] section configures the TUI
	// readOnly says why the console must be read-only ("" = it need
	// not): the token is a viewer's.
	readOnly string
	logPath  string // "" with --connect and --demo
	// close stops what startConsole started. Instances and containers keep
	// running, except in demo mode, which destroys its instances and
	// removes its temporary state dir.
	close func() error
}

// startConsole loads the config and builds the backend: a client of a
// running dispatcher (--connect), or an engine in this process that also
// serves the API, with logs in <state_dir>/dispatch-tui.log (never the
// terminal the TUI draws on).
func startConsole(f consoleFlags) (*console, error) {
	cfg, err := config.FindAndLoad(f.configPath)
	if err != nil {
		return nil, err
	}
	if f.connect != "" {
		return connectConsole(f, cfg)
	}

	describe := cfg.Cloud.Driver + " (in-process)"
	var tmp string
	if f.demo {
		if tmp, err = os.MkdirTemp("", "dispatch-tui-demo-"); err != nil {
			return nil, fmt.Errorf("create demo state dir: %w", err)
		}
		cfg = simulate.DemoConfig(cfg, tmp)
		describe = "demo: local (in-process)"
	}
	removeTmp := func() {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
	}
	// A console that fails to start (its port taken, a store another
	// dispatcher holds) leaves no state dir it created, log included:
	// the error is printed.
	undoFresh := launch.UndoFreshStateDir(cfg.Dispatcher.StateDir)
	if err := os.MkdirAll(cfg.Dispatcher.StateDir, 0o700); err != nil {
		removeTmp()
		return nil, fmt.Errorf("create state dir (dispatcher.state_dir): %w", err)
	}
	logPath := filepath.Join(cfg.Dispatcher.StateDir, "dispatch-tui.log")
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		removeTmp()
		undoFresh()
		return nil, fmt.Errorf("open log file: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(logFile, nil))
	fail := func(err error) (*console, error) {
		log.Error("start", "err", err.Error())
		logFile.Close()
		removeTmp()
		undoFresh()
		return nil, err
	}
	opts := launch.Options{Config: cfg, Logger: log}
	r, err := launch.New(opts)
	if err != nil {
		return fail(err)
	}
	stopAPI, err := launch.Serve(r, opts)
	if err != nil && f.demo {
		// A daemon may hold the configured port: serve the demo's API on
		// its socket only.
		log.Warn("demo: serve the API on the socket only", "err", err.Error())
		cfg.Dispatcher.Listen = ""
		stopAPI, err = launch.Serve(r, opts)
	}
	if err != nil {
		r.Close()
		return fail(err)
	}
	log.Info("console started", "driver", cfg.Cloud.Driver, "state_dir", cfg.Dispatcher.StateDir,
		"config", cfg.Path, "demo", f.demo)

	runCtx, stopRun := context.WithCancel(context.Background())
	engineDone := make(chan struct{})
	go func() {
		defer close(engineDone)
		r.Run(runCtx)
	}()
	feedDone := make(chan struct{})
	if f.demo {
		go func() {
			defer close(feedDone)
			if err := simulate.Feed(runCtx, r.Engine, simulate.FeedOptions{Real: true}); err != nil {
				log.Error("demo workload", "err", err.Error())
			}
		}()
	} else {
		close(feedDone)
	}

	closeFn := func() error {
		log.Info("console stopping")
		stopRun()
		<-feedDone
		// API first (no new verbs), then the engine (state written).
		ctx, cancel := context.WithTimeout(context.Background(), launch.StopTimeout/2)
		if err := stopAPI(ctx); err != nil {
			// Requests still in flight (or idle keep-alive connections
			// a client dialled but never used) after the timeout: not
			// worth failing the exit for.
			log.Warn("stop api", "err", err.Error())
		}
		cancel()
		<-engineDone
		if f.demo {
			// Leave nothing behind: destroy the demo's instances (and so
			// their containers).
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			insts, _ := r.Driver.Instances(ctx, nil)
			for _, i := range insts {
				if err := i.Destroy(ctx); err != nil {
					log.Warn("demo: destroy instance", "instance", i.ID(), "err", err.Error())
				}
			}
			cancel()
		}
		err := r.Close()
		if err != nil {
			log.Error("stop", "err", err.Error())
		} else {
			log.Info("console stopped")
		}
		logFile.Close()
		removeTmp()
		return err
	}
	c := &console{backend: backend.NewInProcess(r.Engine, describe), cfg: cfg, close: closeFn}
	if !f.demo { // the demo's log goes with its state dir
		c.logPath = logPath
	}
	return c, nil
}

// attachedGCPercent is the garbage collector's GOGC for an attached
// console when GOGC is unset: its heap is almost all rows kept for hours,
// and a refresh makes little garbage, so a heap a quarter over the live
// one costs some collections more during the first read and keeps RSS
// near what the rows need (docs/design.md §7.2; at 100 the heap grows to
// twice them).
const attachedGCPercent = 25

// connectConsole attaches the console to a running dispatcher (--connect):
// its socket needs no token; TCP takes --token, $DISPATCH_TUI_TOKEN or the
// config's, and https a pinned fingerprint or a certificate the system
// trusts. A viewer token makes the console read-only, saying why.
func connectConsole(f consoleFlags, cfg *config.Config) (*console, error) {
	token, pin := f.token, f.pin
	if token == "" {
		token = os.Getenv("DISPATCH_TUI_TOKEN")
	}
	if token == "" {
		token = cfg.Dispatcher.Token
	}
	if pin == "" {
		pin = os.Getenv("DISPATCH_TUI_TLS_FINGERPRINT")
	}
	if cli.IsSocket(f.connect) {
		token = ""
	}
	c, err := api.Dial(f.connect, api.ClientOptions{Token: token, TLSFingerprint: pin})
	if err != nil {
		return nil, err
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(attachedGCPercent)
	}
	r := backend.NewRemote(c, "remote "+f.connect)
	r.Refresh = cfg.TUI.Refresh
	con := &console{backend: r, cfg: cfg, close: func() error { return nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := r.Identity(ctx)
	if err != nil {
		return nil, cli.Explain(c, err)
	}
	if id.Role != "operator" {
		con.readOnly = fmt.Sprintf("%s has the %s role; verbs need an operator token", id.Actor, id.Role)
	}
	return con, nil
}
