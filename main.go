// Command dispatch-tui runs a container scheduler and cloud worker pool
// with a terminal UI. This file only builds the command line (cobra) and
// dispatches sub-commands; the work is done in the packages under engine/, cloud/
// and tui/.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/api/cli"
	"dispatch-tui/engine/cloudcheck"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/launch"
	"dispatch-tui/engine/runner/agent"
	"dispatch-tui/engine/simulate"
	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/version"
	"dispatch-tui/tui"
)

// rootLong is the top of `dispatch-tui help`.
const rootLong = `dispatch-tui runs a container scheduler and cloud worker pool with a terminal UI.

Without a command it runs the console:
  dispatch-tui [--config FILE] [--read-only]    console + in-process engine (also serves the API)
  dispatch-tui --daemon [--config FILE]         headless engine, JSON logs to stderr
  dispatch-tui --connect URL [--token T] [--tls-fingerprint SHA256] [--read-only]
                                                console attached to a running daemon
                                                (URL: unix:PATH, https://host:port, http://127.0.0.1:port;
                                                a comma-separated list of a cluster's nodes fails over)
  dispatch-tui --demo [--read-only]             console + engine + local driver + a sample workload

Client commands and --connect reach the daemon on its socket in the state dir (no
token; same user, or dispatcher.socket_group), else over TCP with --server/--token
(https off loopback; --tls-fingerprint pins a self-signed certificate). See "Access
and security" in README.md. Exit codes: 0 success, 2 a usage error (or a value
the server refused), 3 not found, 4 conflict (finished, shutting down, not ours),
5 no instance type fits, 1 any other error (or the server could not be reached).

The console modes log to <state_dir>/dispatch-tui.log, never to the terminal; --demo
uses a temporary state dir and removes it, and its instances, on quit. NO_COLOR turns
colour off. "dispatch-tui runner ..." is the worker-side protocol the dispatcher runs
on instances.

Without --config the config file is ./dispatch-tui.toml, else
$XDG_CONFIG_HOME/dispatch-tui/config.toml, else the built-in defaults.
config.toml.example lists every key.`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args and returns the exit status: 0 on
// success, 1 on an error, 2 on a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "runner" {
		// The on-instance program the dispatcher runs over SSH: its own
		// protocol and exit codes, no flags of ours.
		return agent.Main(args[1:], os.Stdin, stdout, stderr, agent.Env{Version: version.String()})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := &cli.Env{Stdout: stdout, Stderr: stderr, Stdin: os.Stdin, TermWidth: stdoutWidth(stdout), StderrTerminal: isTerminal(stderr)}
	return cli.Execute(ctx, newRoot(env), args, stderr)
}

// newRoot builds the command tree: the console modes on the root, the
// client commands of engine/api/cli, and check-config, simulate, version.
func newRoot(env *cli.Env) *cobra.Command {
	var cf consoleFlags
	var daemon bool
	var profileDir string
	root := &cobra.Command{
		Use:   "dispatch-tui",
		Short: "Container scheduler and cloud worker pool with a terminal UI",
		Long:  rootLong,
		Example: `  dispatch-tui --demo
  dispatch-tui --daemon --config /etc/dispatch-tui.toml
  dispatch-tui --connect unix:/var/lib/dispatch-tui/dispatch-tui.sock
  dispatch-tui submit --vcpus 2 --ram 4GiB -- ./job.sh
  dispatch-tui ls instances -o wide
  source <(dispatch-tui completion bash)`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cf.configPath, cf.token, cf.pin = env.ConfigPath, env.Token, env.TLSFingerprint
			switch {
			case daemon && (cf.connect != "" || cf.demo):
				return cli.UsageError("--daemon runs the engine here: it excludes --connect and --demo")
			case cf.connect != "" && cf.demo:
				return cli.UsageError("--connect and --demo exclude each other")
			case cf.connect != "" && api.CheckServer(cf.connect) != nil:
				return cli.UsageError("--connect %s", api.CheckServer(cf.connect))
			case daemon && cf.readOnly:
				return cli.UsageError("--read-only is a console setting; --daemon has no console")
			case !daemon && cf.connect == "" && profileDir != "":
				return cli.UsageError("--profile is a --daemon and --connect setting: the in-process console writes no profiles")
			case daemon:
				return exitCode(daemonCmd(cmd.Context(), cf.configPath, profileDir, env.Stderr))
			}
			return exitCode(consoleCmd(cmd.Context(), cf, profileDir, env.Stderr))
		},
	}
	cli.Configure(root)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	f := root.Flags()
	f.BoolVar(&daemon, "daemon", false, "run the engine headless, JSON logs on stderr")
	f.StringVar(&cf.connect, "connect", "", "`URL` of a daemon to attach the console to (a comma-separated list: the nodes of a cluster, tried in turn)")
	f.BoolVar(&cf.demo, "demo", false, "console with a sample workload in a temporary state dir")
	f.BoolVar(&cf.readOnly, "read-only", false, "console without the verbs")
	// A measurement aid (profile.go), not a user setting: hidden.
	f.StringVar(&profileDir, "profile", "", "with --daemon or --connect: write CPU and heap profiles into `DIR`")
	f.MarkHidden("profile")
	cli.BindGlobalFlags(root.PersistentFlags(), env)
	cli.AddCommands(root, env)

	root.AddGroup(&cobra.Group{ID: "other", Title: "Other commands:"})
	// One version, the build's: `version`, --version and -v.
	root.Version = version.String()
	root.SetVersionTemplate("dispatch-tui {{.Version}}\n")
	root.Flags().BoolP("version", "v", false, "print the version")
	versionCmd := &cobra.Command{
		Use: "version", Short: "Print the version", Args: cli.NoArgs, GroupID: "other",
		Run: func(*cobra.Command, []string) { fmt.Fprintf(env.Stdout, "dispatch-tui %s\n", version.String()) },
	}
	check := &cobra.Command{
		Use: "check-config [FILE]", Short: "Validate a config file; print errors with line numbers", GroupID: "other",
		Long: `Validate a config file: every key known, every value in range, and the console's
[tui.keys] bindings usable. Prints "FILE: ok" (exit 0) or the errors with line
numbers (exit 1). Without FILE it checks the file --config names, else the one
the dispatcher would read (./dispatch-tui.toml, then
$XDG_CONFIG_HOME/dispatch-tui/config.toml).`,
		Example: "  dispatch-tui check-config /etc/dispatch-tui.toml\n  dispatch-tui --config /etc/dispatch-tui.toml check-config",
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) > 1:
				return cli.UsageError("want one FILE, got %d arguments", len(args))
			case len(args) == 1 && env.ConfigPath != "" && env.ConfigPath != args[0]:
				return cli.UsageError("two files to check: %s and --config %s; name one", termsafe.Escape(args[0]), termsafe.Escape(env.ConfigPath))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			path, err := configToCheck(args, env.ConfigPath)
			if err != nil {
				return err
			}
			return checkConfig(path, env.Stdout, env.Stderr)
		},
	}
	root.AddCommand(versionCmd, check, simulateCmd(env), cloudtestCmd(env), storeCmd(env))
	root.SetHelpCommandGroupID("other")
	root.SetCompletionCommandGroupID("other")
	cli.FixBashCompletion(root)
	return root
}

// exitCode turns a console or daemon exit code (which printed its own
// error) into Execute's error.
func exitCode(code int) error {
	if code == 0 {
		return nil
	}
	return cli.Silent(code)
}

// configToCheck is the file check-config checks: FILE, else --config,
// else the file the dispatcher would find.
func configToCheck(args []string, flag string) (string, error) {
	switch {
	case len(args) == 1:
		return args[0], nil
	case flag != "":
		return flag, nil
	}
	path, err := config.Find()
	if err != nil {
		return "", err
	}
	if path == "" {
		return "", cli.UsageError("no config file to check: name one (check-config FILE), or put it at ./dispatch-tui.toml or $XDG_CONFIG_HOME/dispatch-tui/config.toml")
	}
	return path, nil
}

// checkConfig validates the config file at path, and the console's key
// bindings in it. Warnings (a config that works but should be changed) go
// to stderr before the verdict.
func checkConfig(path string, stdout, stderr io.Writer) error {
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", termsafe.Escape(w.Error()))
	}
	if err := tui.ValidateKeys(cfg.TUI.Keys); err != nil {
		return fmt.Errorf("%s: [tui.keys]: %w", path, err)
	}
	fmt.Fprintf(stdout, "%s: ok\n", termsafe.Escape(path))
	return nil
}

// cloudtestCmd checks the configured driver end to end on one instance.
func cloudtestCmd(env *cli.Env) *cobra.Command {
	var o cloudcheck.Options
	cmd := &cobra.Command{
		Use:   "cloudtest",
		Short: "Check the configured driver end to end on one instance",
		Long:  cloudcheck.Help,
		Example: `  dispatch-tui cloudtest --config /etc/dispatch-tui.toml
  dispatch-tui cloudtest --config aws.toml --type large --timeout 15m`,
		GroupID: "other",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitCode(cloudcheck.Exec(cmd.Context(), env.ConfigPath, o, env.Stdout, env.Stderr))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Type, "type", "", "instance type to create (default: the cheapest configured)")
	f.DurationVar(&o.Timeout, "timeout", cloudcheck.DefaultTimeout, "limit for all steps together")
	return cmd
}

// simulateCmd runs the engine headless with a sample workload.
func simulateCmd(env *cli.Env) *cobra.Command {
	var o simulate.Options
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Run the engine headless with a sample workload; print progress",
		Long: `Run the engine headless on a sample workload, printing instances and containers by
state every second until every container is final and every instance has shut down.`,
		Example: `  dispatch-tui simulate
  dispatch-tui simulate --driver fake --containers 500 --quota 20`,
		GroupID: "other",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Containers < 1 || o.Quota < 0 || o.Timeout <= 0 {
				return cli.UsageError("want --containers >= 1, --quota >= 0, --timeout > 0")
			}
			if o.Driver != "local" && o.Driver != "fake" {
				return cli.UsageError("--driver must be local or fake")
			}
			cfg, err := config.FindAndLoad(env.ConfigPath)
			if err != nil {
				return err
			}
			o.Config, o.Out = cfg, env.Stdout
			return simulate.Run(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Containers, "containers", 60, "sample containers to submit")
	f.IntVar(&o.Quota, "quota", 8, "cloud quota in instances (0 = unlimited)")
	f.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "stop after this long")
	f.Uint64Var(&o.Seed, "seed", 1, "random seed for the workload and faults")
	f.StringVar(&o.Driver, "driver", "local", "local (real processes over SSH) or fake (in-memory)")
	cmd.RegisterFlagCompletionFunc("driver", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return []string{"local", "fake"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) func() bool {
	return func() bool {
		f, ok := w.(*os.File)
		if !ok {
			return false
		}
		_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
		return err == nil
	}
}

// stdoutWidth reports the width of the terminal on stdout, 0 when it is
// not one.
func stdoutWidth(stdout io.Writer) func() int {
	return func() int {
		f, ok := stdout.(*os.File)
		if !ok {
			return 0
		}
		ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
		if err != nil {
			return 0
		}
		return int(ws.Col)
	}
}

// daemonCmd runs the engine headless with JSON logs on stderr until ctx
// ends: run's SIGINT or SIGTERM. Its context is the one the process set up
// first: a second one registered here would leave a window in which a
// signal went to the first, unread, and the daemon ran on.
//
// profileDir, if set, has it write debug profiles there (profile.go).
func daemonCmd(ctx context.Context, configPath, profileDir string, stderr io.Writer) int {
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	if profileDir != "" {
		defer startProfiles(ctx, log, profileDir)()
	}
	cfg, err := config.FindAndLoad(configPath)
	if err != nil {
		log.Error("load config", "err", err.Error())
		return 1
	}
	applyMemoryLimit(ctx, log, cfg.Dispatcher.MemoryLimit)
	if err := launch.RunDaemon(ctx, launch.Options{Config: cfg, Logger: log}); err != nil {
		log.Error("daemon", "err", err.Error())
		return 1
	}
	return 0
}

// consoleCmd runs the TUI (in-process engine, --connect or --demo) until
// the user quits, SIGINT, SIGTERM or SIGHUP, then takes the backend down.
// profileDir, if set (--connect only), has it write debug profiles there
// (profile.go), logging their failures nowhere: stderr is the screen.
func consoleCmd(parent context.Context, f consoleFlags, profileDir string, stderr io.Writer) int {
	if profileDir != "" {
		defer startProfiles(parent, slog.New(slog.DiscardHandler), profileDir)()
	}
	c, err := startConsole(f)
	if err != nil {
		fmt.Fprintln(stderr, "dispatch-tui:", cli.ErrorText(err))
		return 1
	}
	// SIGHUP (the terminal closed) takes the same way out as q, so the
	// demo's instances and state dir go with it; SIGINT and SIGTERM end
	// parent (run's).
	ctx, stop := signal.NotifyContext(parent, syscall.SIGHUP)
	defer stop()
	runErr := runConsole(ctx, c, f)
	closeErr := c.close()
	if runErr != nil || closeErr != nil {
		fmt.Fprintln(stderr, "dispatch-tui:", cli.ErrorText(errors.Join(runErr, closeErr)))
		if c.logPath != "" {
			fmt.Fprintln(stderr, "log:", termsafe.Escape(c.logPath))
		}
		return 1
	}
	return 0
}
