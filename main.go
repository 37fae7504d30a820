// Command dispatch-tui runs a container scheduler and cloud worker pool
// with a terminal UI. This file only parses flags and dispatches
// sub-commands; the work is done in the packages under engine/, cloud/
// and tui/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"dispatch-tui/engine/api/cli"
	"dispatch-tui/engine/cloudcheck"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/launch"
	"dispatch-tui/engine/runner/agent"
	"dispatch-tui/engine/simulate"
)

const version = "0.1.0-dev"

const usage = `usage:
  dispatch-tui [--config FILE] [--read-only]   TUI + in-process engine (also serves the API)
  dispatch-tui --daemon [--config FILE]        headless engine, JSON logs to stderr
  dispatch-tui --connect URL [--token T] [--tls-fingerprint SHA256] [--read-only]
                                               TUI attached to a running daemon
                                               (URL: unix:PATH, https://host:port, http://127.0.0.1:port)
  dispatch-tui --demo [--read-only]            TUI + engine + local driver + a sample workload
  dispatch-tui submit [--vcpus N --ram 2GiB --scratch 10GiB --gpus N --priority N
                       --max-attempts N --restart on-failure --name S --env K=V] -- CMD ARGS...
  dispatch-tui ls instances|containers|types|events [-o table|json]
  dispatch-tui hold|drain|run|kill INSTANCE...          (kill takes --reason)
  dispatch-tui hold|release|kill CONTAINER...; dispatch-tui priority CONTAINER N
  dispatch-tui logs CONTAINER [--tail N] [--follow]
  dispatch-tui pause|resume
  dispatch-tui check-config FILE              validate; exit 0 / print errors with line numbers
  dispatch-tui cloudtest [--config FILE] [--type NAME] [--timeout 30m]
                                               check the configured driver end to end on one
                                               instance (exit 0 ok, 1 a step failed, 2 usage)
  dispatch-tui runner ...                      worker-side protocol
  dispatch-tui version
  dispatch-tui simulate [--driver local|cloudtest --containers N --quota N --timeout 2m]
                                               the engine with a sample workload

Client commands and --connect reach the daemon on its socket in the state
dir (no token; same user, or dispatcher.socket_group), else over TCP with
--server/--token (https off loopback; --tls-fingerprint pins a self-signed
certificate). See "Access and security" in README.md.

The TUI modes log to <state_dir>/dispatch-tui.log, never to the terminal;
--demo uses a temporary state dir and removes it, and its instances, on
quit. NO_COLOR turns colour off.

Without --config the config file is ./dispatch-tui.toml, else
$XDG_CONFIG_HOME/dispatch-tui/config.toml, else the built-in defaults.
config.toml.example lists every key.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args and returns the exit status: 0 on
// success, 1 on an error, 2 on a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dispatch-tui", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	fs.String("config", "", "config file")
	daemon := fs.Bool("daemon", false, "run the engine headless")
	connect := fs.String("connect", "", "URL of a daemon to attach the TUI to")
	fs.String("token", "", "API token (default $DISPATCH_TUI_TOKEN, then the config)")
	server := fs.String("server", "", "dispatcher API for client commands: unix:PATH, https://host:port or http://host:port (default $DISPATCH_TUI_SERVER, then the socket in the state dir, then dispatcher.listen)")
	pin := fs.String("tls-fingerprint", "", "SHA-256 of the server's TLS certificate to pin (default $DISPATCH_TUI_TLS_FINGERPRINT)")
	demo := fs.Bool("demo", false, "TUI with a sample workload")
	readOnly := fs.Bool("read-only", false, "TUI without the verbs")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	args = fs.Args()
	if len(args) == 0 && *daemon {
		return daemonCmd(fs.Lookup("config").Value.String(), stderr)
	}
	if len(args) == 0 {
		if *connect != "" && *demo {
			fmt.Fprintf(stderr, "dispatch-tui: --connect and --demo exclude each other\n\n%s", usage)
			return 2
		}
		return consoleCmd(consoleFlags{
			configPath: fs.Lookup("config").Value.String(), connect: *connect,
			token: fs.Lookup("token").Value.String(), pin: *pin, demo: *demo, readOnly: *readOnly,
		}, stderr)
	}

	cmd, rest := args[0], args[1:]
	switch {
	case cmd == "version":
		if len(rest) != 0 {
			fmt.Fprintf(stderr, "usage: dispatch-tui version\n")
			return 2
		}
		fmt.Fprintf(stdout, "dispatch-tui %s\n", version)
		return 0
	case cmd == "check-config":
		if len(rest) != 1 {
			fmt.Fprintf(stderr, "usage: dispatch-tui check-config FILE\n")
			return 2
		}
		return checkConfig(rest[0], stdout, stderr)
	case cmd == "cloudtest":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return cloudcheck.Main(ctx, rest, fs.Lookup("config").Value.String(), stdout, stderr)
	case cmd == "simulate":
		return simulateCmd(fs.Lookup("config").Value.String(), rest, stdout, stderr)
	case cmd == "runner":
		// The on-instance program the dispatcher runs over SSH.
		return agent.Main(rest, os.Stdin, stdout, stderr, agent.Env{Version: version})
	case cli.IsCommand(cmd):
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return cli.Run(ctx, cmd, rest, cli.Env{
			Stdout: stdout, Stderr: stderr, ConfigPath: fs.Lookup("config").Value.String(),
			Server: *server, Token: fs.Lookup("token").Value.String(), TLSFingerprint: *pin,
		})
	default:
		fmt.Fprintf(stderr, "dispatch-tui: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}

// checkConfig validates the config file at path.
func checkConfig(path string, stdout, stderr io.Writer) int {
	if _, err := config.Load(path); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: ok\n", path)
	return 0
}

// simulateCmd runs the engine headless on the cloudtest driver.
func simulateCmd(configPath string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("containers", 60, "sample containers to submit")
	quota := fs.Int("quota", 8, "cloud quota in instances (0 = unlimited)")
	timeout := fs.Duration("timeout", 2*time.Minute, "stop after this long")
	seed := fs.Uint64("seed", 1, "random seed for the workload and faults")
	driver := fs.String("driver", "local", "local (real processes over SSH) or cloudtest (in-memory)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 || *n < 1 || *quota < 0 || *timeout <= 0 {
		fmt.Fprintln(stderr, "usage: dispatch-tui simulate [--driver local|cloudtest] [--containers N>=1] [--quota N>=0] [--timeout D>0] [--seed N]")
		return 2
	}
	cfg, err := config.FindAndLoad(configPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = simulate.Run(ctx, simulate.Options{Config: cfg, Containers: *n, Quota: *quota, Timeout: *timeout, Seed: *seed, Out: stdout, Driver: *driver})
	if err != nil {
		fmt.Fprintln(stderr, "dispatch-tui simulate:", err)
		return 1
	}
	return 0
}

// daemonCmd runs the engine headless with JSON logs on stderr until SIGINT
// or SIGTERM.
func daemonCmd(configPath string, stderr io.Writer) int {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	cfg, err := config.FindAndLoad(configPath)
	if err != nil {
		log.Error("load config", "err", err.Error())
		return 1
	}
	applyMemoryLimit(log, cfg.Dispatcher.MemoryLimit)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := launch.RunDaemon(ctx, launch.Options{Config: cfg, Logger: log}); err != nil {
		log.Error("daemon", "err", err.Error())
		return 1
	}
	return 0
}

// applyMemoryLimit sets the daemon's soft memory limit (dispatcher.memory_limit)
// unless GOMEMLIMIT set one already, and logs which applies.
func applyMemoryLimit(log *slog.Logger, limit int64) {
	switch {
	case os.Getenv("GOMEMLIMIT") != "":
		log.Info("memory limit from GOMEMLIMIT", "bytes", debug.SetMemoryLimit(-1))
	case limit > 0:
		debug.SetMemoryLimit(limit)
		log.Info("memory limit from dispatcher.memory_limit", "bytes", limit)
	default:
		log.Info("no memory limit")
	}
}

// consoleCmd runs the TUI (in-process engine, --connect or --demo) until
// the user quits, SIGINT or SIGTERM, then takes the backend down.
func consoleCmd(f consoleFlags, stderr io.Writer) int {
	c, err := startConsole(f)
	if err != nil {
		fmt.Fprintln(stderr, "dispatch-tui:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	runErr := runConsole(ctx, c, f)
	closeErr := c.close()
	if runErr != nil || closeErr != nil {
		fmt.Fprintln(stderr, "dispatch-tui:", errors.Join(runErr, closeErr))
		if c.logPath != "" {
			fmt.Fprintln(stderr, "log:", c.logPath)
		}
		return 1
	}
	return 0
}
