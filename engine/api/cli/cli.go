// Package cli implements the client sub-commands of dispatch-tui (docs/design.md
// §7.1) as cobra commands: submit, ls, instance and container verbs, logs,
// pause and resume, all through the management API, with shell completion
// of live ids. Exit codes by kind of error: exitcode.go.
package cli

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/view"
)

// Env is what a command needs from its surroundings.
type Env struct {
	Stdout, Stderr io.Writer
	Stdin          io.Reader // submit -f -
	Getenv         func(string) string
	// TermWidth is the width of the terminal on stdout, 0 when stdout is
	// not a terminal (tables are then not cut); $COLUMNS overrides it.
	TermWidth func() int
	// StderrTerminal reports whether stderr is a terminal (progress of
	// long verbs is shown there then); nil = it is not.
	StderrTerminal func() bool
	// WatchInterval is how often ls --watch asks again (0 = a second).
	WatchInterval time.Duration
	// ConfigPath is --config ("" = the usual search).
	ConfigPath string
	// Server and Token are --server and --token ("" = environment, then config).
	Server, Token string
	// TLSFingerprint is --tls-fingerprint ("" = environment, else verify
	// against the system's roots).
	TLSFingerprint string
	// Now is the clock AGE and --since read (nil = the wall clock).
	Now func() time.Time
}

func (env *Env) now() time.Time {
	if env.Now == nil {
		return time.Now()
	}
	return env.Now()
}

func (env *Env) getenv(k string) string {
	if env.Getenv == nil {
		return os.Getenv(k)
	}
	return env.Getenv(k)
}

// usageError is a mistake on the command line: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// BindGlobalFlags adds the flags every client command takes, before or
// after its name: --server, --token, --tls-fingerprint and --config.
func BindGlobalFlags(fs *pflag.FlagSet, env *Env) {
	fs.StringVar(&env.ConfigPath, "config", env.ConfigPath, "read the config from `FILE` (default ./dispatch-tui.toml, then $XDG_CONFIG_HOME/dispatch-tui/config.toml)")
	fs.StringVar(&env.Server, "server", env.Server, "dispatcher API for client commands, a `URL`: unix:PATH, https://host:port or http://host:port, or a comma-separated list of a cluster's nodes tried in turn (default $DISPATCH_TUI_SERVER, then the socket in the state dir, then dispatcher.listen)")
	fs.StringVar(&env.Token, "token", env.Token, "API `TOKEN` for TCP (default $DISPATCH_TUI_TOKEN, then the config)")
	fs.StringVar(&env.TLSFingerprint, "tls-fingerprint", env.TLSFingerprint, "`SHA256` of the server's TLS certificate to pin (default $DISPATCH_TUI_TLS_FINGERPRINT)")
}

// AddCommands adds the client commands to root.
func AddCommands(root *cobra.Command, env *Env) {
	root.AddGroup(&cobra.Group{ID: "client", Title: "Client commands (through the daemon's API):"})
	cmds := []*cobra.Command{submitCmd(env), listCmd(env)}
	for _, name := range verbNames() {
		cmds = append(cmds, verbCmd(env, name))
	}
	cmds = append(cmds, priorityCmd(env), logsCmd(env), pauseCmd(env, "pause"), pauseCmd(env, "resume"), costCmd(env))
	for _, c := range cmds {
		c.GroupID = "client"
		root.AddCommand(c)
	}
}

// Configure makes root report errors through Execute: no usage dump on an
// error, flag mistakes are usage errors.
func Configure(root *cobra.Command) {
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		// pflag reads "-1" as shorthand flags: for priority it is a value.
		if cmd.Name() == "priority" && strings.HasPrefix(err.Error(), "unknown shorthand flag: '") {
			return usagef("priority must be a whole number >= 0 (0 = never scheduled); a negative one is not a priority")
		}
		msg := err.Error()
		if i := strings.Index(msg, "time: invalid duration "); i >= 0 {
			msg = msg[:i] + "want a duration such as 90s, 10m or 2h"
		}
		return &usageError{msg}
	})
}

// Execute runs root with args, prints any error once on stderr and
// returns the exit code: 0, 2 for usage, else by the error's kind
// (exitCodes).
func Execute(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(singleDashLongFlags(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	path := root.Name()
	if cmd != nil {
		path = cmd.CommandPath()
	}
	var ue *usageError
	var se silentError
	switch {
	case errors.As(err, &se):
		return se.code
	case strings.HasPrefix(err.Error(), "unknown command "):
		// cobra's message: unknown command "x" for "dispatch-tui"[\n\nDid you mean this?\n\ty\n]
		first, rest, _ := strings.Cut(err.Error(), "\n")
		name := strings.TrimPrefix(first, "unknown command ")
		name, _, _ = strings.Cut(name, " for ")
		hint := ""
		for _, l := range strings.Split(rest, "\n") {
			if strings.HasPrefix(l, "\t") {
				hint = fmt.Sprintf("Did you mean %q? ", strings.TrimSpace(l))
				break
			}
		}
		fmt.Fprintf(stderr, "%s: unknown command %s\n%sRun '%s help' for the list of commands.\n", path, termsafe.Escape(name), hint, root.Name())
		return exitUsage
	case errors.As(err, &ue):
		// Each line escaped: a usage error may list several mistakes.
		lines := strings.Split(ue.msg, "\n")
		for i, l := range lines {
			lines[i] = termsafe.Escape(l)
		}
		fmt.Fprintf(stderr, "%s: %s\nSee '%s --help'.\n", path, strings.Join(lines, "\n"), path)
		return exitUsage
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return exitCodes[view.KindOther]
	default:
		fmt.Fprintf(stderr, "%s: %s\n", path, ErrorText(err))
		return exitCode(err)
	}
}

// ErrorText is err's message for the terminal: the dispatcher's messages
// may quote what was submitted, and ids and paths are as the user typed
// them.
func ErrorText(err error) string { return termsafe.Text(err.Error()) }

// silentError ends a command with an exit code, its message printed
// already.
type silentError struct{ code int }

func (e silentError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// Silent ends a command with exit code, printing nothing more: for
// commands that reported their own error.
func Silent(code int) error { return silentError{code} }

// singleDashLongFlags rewrites "-name" and "-name=value" to "--name..."
// where name is a long flag of the command args run (as the flag package
// before cobra read them), up to "--". No long flag is spelled by
// shorthand letters alone, so nothing that worked with two dashes changes.
func singleDashLongFlags(root *cobra.Command, args []string) []string {
	// The root's flags first, so that finding the command skips their
	// values; then the command's.
	out := dashLong(root, args)
	if cmd, _, err := root.Find(out); err == nil && cmd != root {
		out = dashLong(cmd, out)
	}
	return out
}

func dashLong(cmd *cobra.Command, args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if len(name) > 1 && cmd.Flag(name) != nil {
			out[i] = "-" + a
		}
	}
	return out
}

// UsageError makes err a usage error (exit 2), for the commands main.go
// defines.
func UsageError(format string, args ...any) error { return usagef(format, args...) }

// noArgs and exactArgs check positional arguments, as usage errors.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) != 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

// NoArgs is noArgs for the commands main.go defines.
var NoArgs cobra.PositionalArgs = noArgs

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("want %s, got %d argument(s)", what, len(args))
		}
		return nil
	}
}

// ExactArgs is exactArgs for the commands main.go defines.
func ExactArgs(n int, what string) cobra.PositionalArgs { return exactArgs(n, what) }

// client finds the server and token: flag, then environment, then
// config. Without a server it uses the dispatcher's socket in the
// config's state dir when there is one, else dispatcher.listen.
func client(env *Env) (*api.Client, error) {
	server, token, pin := env.Server, env.Token, env.TLSFingerprint
	if server == "" {
		server = env.getenv("DISPATCH_TUI_SERVER")
	}
	if token == "" {
		token = env.getenv("DISPATCH_TUI_TOKEN")
	}
	if pin == "" {
		pin = env.getenv("DISPATCH_TUI_TLS_FINGERPRINT")
	}
	if server == "" || token == "" && !IsSocket(server) {
		cfg, err := config.FindAndLoad(env.ConfigPath)
		if err != nil {
			return nil, err
		}
		if server == "" {
			server = LocalServer(cfg)
		}
		if token == "" && !IsSocket(server) {
			token = cfg.Dispatcher.Token
		}
	}
	if IsSocket(server) {
		token = "" // the socket knows who connects
	}
	c, err := api.Dial(server, api.ClientOptions{Token: token, TLSFingerprint: pin})
	if err != nil {
		return nil, err
	}
	c.Actor = api.UserActor("cli")
	return c, nil
}

// IsSocket reports whether a server address (or each of a
// comma-separated list) names a unix socket: then no token is needed.
func IsSocket(server string) bool {
	list := api.SplitServers(server)
	for _, s := range list {
		if !strings.HasPrefix(s, "unix:") && !strings.HasPrefix(s, "/") {
			return false
		}
	}
	return len(list) > 0
}

// LocalServer is the server a client on this machine uses without
// --server: the socket in the state dir when it exists or no TCP listener
// is configured, else dispatcher.listen (https off loopback or with
// tls = "on").
func LocalServer(cfg *config.Config) string {
	d := &cfg.Dispatcher
	sock := "unix:" + d.SocketPath()
	if _, err := os.Stat(d.SocketPath()); err == nil || d.Listen == "" {
		return sock
	}
	host, _, _ := net.SplitHostPort(d.Listen)
	if d.TLS == "on" || d.TLS == "auto" && !api.IsLoopback(host) {
		return "https://" + d.Listen
	}
	return "http://" + d.Listen
}

// Explain is explain for the console's --connect.
func Explain(c *api.Client, err error) error { return explain(c, err) }

// explain turns a transport error into advice.
func explain(c *api.Client, err error) error {
	var ne net.Error
	var oe *net.OpError
	var ue x509.UnknownAuthorityError
	var none *api.UnreachableError
	switch {
	case errors.As(err, &none):
		return fmt.Errorf("cannot reach any of the dispatchers at %s: %v (are their `dispatch-tui --daemon` nodes running? set --server or DISPATCH_TUI_SERVER)", strings.Join(none.Tried, ", "), none.Err)
	case errors.As(err, &ue):
		return fmt.Errorf("cannot verify the dispatcher at %s: %v (for the self-signed certificate the daemon makes, pass the fingerprint it logs: --tls-fingerprint or DISPATCH_TUI_TLS_FINGERPRINT)", c.Where(), err)
	case strings.Contains(err.Error(), "fingerprint"):
		return fmt.Errorf("refusing the dispatcher at %s: %v", c.Where(), err)
	case errors.Is(err, os.ErrNotExist) && c.Socket != "":
		return fmt.Errorf("no dispatcher socket at %s (is `dispatch-tui --daemon` running with that state_dir? set --server or DISPATCH_TUI_SERVER)", c.Socket)
	case errors.Is(err, syscall.ECONNREFUSED) && c.Socket != "":
		return fmt.Errorf("nothing answers on the socket %s: the dispatcher that made it has stopped (start `dispatch-tui --daemon`)", c.Socket)
	case errors.Is(err, os.ErrPermission) && c.Socket != "":
		return fmt.Errorf("cannot use the dispatcher's socket %s: %v (it admits the user running the dispatcher, and dispatcher.socket_group when set)", c.Socket, err)
	case errors.As(err, &oe) || (errors.As(err, &ne) && ne.Timeout()):
		return fmt.Errorf("cannot reach the dispatcher at %s: %v (is `dispatch-tui --daemon` running? set --server or DISPATCH_TUI_SERVER)", c.Where(), err)
	}
	var ae *api.APIError
	if errors.As(err, &ae) {
		msg := ae.Message
		if ae.Status == 401 || ae.Status == 403 && ae.Message == "invalid token" {
			msg += " (set --token or DISPATCH_TUI_TOKEN)"
		}
		if len(ae.Types) > 0 {
			// The engine's message may end with "(types: a, b)": list
			// them once, one a line.
			if i := strings.LastIndex(msg, " (types: "); i >= 0 && strings.HasSuffix(msg, ")") {
				msg = msg[:i]
			}
			msg += "\n  instance types: " + strings.Join(ae.Types, "\n                  ")
		}
		return withKind(msg, err)
	}
	return err
}
