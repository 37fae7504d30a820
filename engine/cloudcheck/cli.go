package cloudcheck

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"dispatch-tui/engine/config"
)

// Usage is the command's usage line.
const Usage = "usage: dispatch-tui cloudtest [--config FILE] [--type NAME] [--timeout 30m]"

// Exit statuses of Main.
const (
	ExitOK     = 0 // every step held
	ExitFailed = 1 // a step failed, or the config or driver did not load
	ExitUsage  = 2 // bad flags or --type
)

// Main is "dispatch-tui cloudtest ARGS": it parses the flags (--config
// defaults to configPath, the global flag's value), loads the config, runs
// the check until it ends or ctx is done (main cancels ctx on SIGINT and
// SIGTERM: the instance is destroyed before Main returns) and returns the
// exit status.
func Main(ctx context.Context, args []string, configPath string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cloudtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, Usage)
		fmt.Fprintln(stderr, `
Creates one instance with the configured driver, waits for it to be listed,
for SSH and the boot probe, checks its secret, deploys the runner, runs a
container, sets and reads back tags, destroys it and waits until it is gone.
One line per step; exit 0 only if every step held, 1 if one failed, 2 on a
usage error. Whatever happens, including ctrl-c, it destroys what it created.

Step limits: create 3m, listed 2m, ssh and boot probe cloud.timeout_booting
each, secret 1m, deploy runner 5m, container 2m, tags 2m, destroy 5m;
cleanup after a failure 5m on top of --timeout.`)
		fs.PrintDefaults()
	}
	cfgPath := fs.String("config", configPath, "config file naming the driver to check (default: as for the dispatcher)")
	typ := fs.String("type", "", "instance type to create (default: the cheapest configured)")
	timeout := fs.Duration("timeout", DefaultTimeout, "limit for all steps together")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() != 0 || *timeout <= 0 {
		fmt.Fprintln(stderr, Usage)
		return ExitUsage
	}
	cfg, err := config.FindAndLoad(*cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, "dispatch-tui cloudtest:", err)
		return ExitFailed
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err = Run(ctx, cfg, Options{Type: *typ, Timeout: *timeout, Logger: log}, stdout)
	var usage *UsageError
	var step *StepError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "dispatch-tui cloudtest: %v\n%s\n", err, Usage)
		return ExitUsage
	case errors.As(err, &step):
		return ExitFailed // its line says what failed and what to do
	}
	fmt.Fprintln(stderr, "dispatch-tui cloudtest:", err)
	return ExitFailed
}
