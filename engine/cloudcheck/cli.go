// The "dispatch-tui cloudtest" command line: usage, help, exit codes.

package cloudcheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"dispatch-tui/engine/config"
	"dispatch-tui/engine/termsafe"
)

// Usage is the command's usage line.
const Usage = "usage: dispatch-tui cloudtest [--config FILE] [--type NAME] [--timeout 30m]"

// Exit statuses of Main.
const (
	ExitOK     = 0 // every step held
	ExitFailed = 1 // a step failed, or the config or driver did not load
	ExitUsage  = 2 // bad flags or --type
)

// Help is the command's long help: what it does and the limits of its steps.
const Help = `Creates one instance with the configured driver, waits for it to be listed,
for SSH and the boot probe, checks its secret, deploys the runner, runs a
container, sets and reads back tags, destroys it and waits until it is gone.
One line per step; exit 0 only if every step held, 1 if one failed, 2 on a
usage error. Whatever happens, including ctrl-c, it destroys what it created.

Step limits: create 3m, listed 2m, ssh and boot probe cloud.timeout_booting
each, secret 1m, deploy runner 5m, container 2m, tags 2m, destroy 5m;
cleanup after a failure 5m on top of --timeout.`

// Exec is "dispatch-tui cloudtest" once its flags are parsed: it loads the
// config at configPath (as the dispatcher finds it when empty), runs the
// check until it ends or ctx is done (main cancels ctx on SIGINT and
// SIGTERM: the instance is destroyed before Exec returns) and returns the
// exit status.
func Exec(ctx context.Context, configPath string, opts Options, stdout, stderr io.Writer) int {
	if opts.Timeout <= 0 {
		fmt.Fprintln(stderr, "dispatch-tui cloudtest: --timeout must be > 0")
		fmt.Fprintln(stderr, Usage)
		return ExitUsage
	}
	cfg, err := config.FindAndLoad(configPath)
	if err != nil {
		fmt.Fprintln(stderr, "dispatch-tui cloudtest:", termsafe.Text(err.Error()))
		return ExitFailed
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	err = Run(ctx, cfg, opts, stdout)
	var usage *UsageError
	var step *StepError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "dispatch-tui cloudtest: %s\n%s\n", termsafe.Text(err.Error()), Usage)
		return ExitUsage
	case errors.As(err, &step):
		return ExitFailed // its line says what failed and what to do
	}
	fmt.Fprintln(stderr, "dispatch-tui cloudtest:", termsafe.Text(err.Error()))
	return ExitFailed
}
