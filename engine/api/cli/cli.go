// Package cli implements the client sub-commands of dispatch-tui (docs/design.md
// §7.1): submit, ls, instance and container verbs, logs, pause and resume,
// all through the management API. Exit codes: 0 success, 1 an error the
// server reported (or it could not be reached), 2 a usage error.
package cli

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/termsafe"
)

// Env is what a command needs from its surroundings.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// ConfigPath is --config ("" = the usual search).
	ConfigPath string
	// Server and Token are --server and --token ("" = environment, then config).
	Server, Token string
	// TLSFingerprint is --tls-fingerprint ("" = environment, else verify
	// against the system's roots).
	TLSFingerprint string
}

// usageError is a mistake on the command line: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// Commands lists the sub-commands this package runs.
var Commands = []string{"submit", "ls", "hold", "drain", "run", "kill", "release", "priority", "logs", "pause", "resume"}

// IsCommand reports whether name is one of Commands.
func IsCommand(name string) bool {
	for _, c := range Commands {
		if c == name {
			return true
		}
	}
	return false
}

// Run executes one client command and returns the exit code.
func Run(ctx context.Context, cmd string, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	err := run(ctx, cmd, args, &env)
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(env.Stderr, "dispatch-tui %s: %s\n", cmd, ue.msg)
		return 2
	default:
		// The dispatcher's messages may quote what was submitted.
		fmt.Fprintf(env.Stderr, "dispatch-tui %s: %s\n", cmd, strings.Join(termsafe.Lines(err.Error()), "\n"))
		return 1
	}
}

func run(ctx context.Context, cmd string, args []string, env *Env) error {
	switch cmd {
	case "submit":
		return submit(ctx, args, env)
	case "ls":
		return list(ctx, args, env)
	case "hold", "drain", "run", "kill", "release":
		return verb(ctx, cmd, args, env)
	case "priority":
		return priority(ctx, args, env)
	case "logs":
		return logs(ctx, args, env)
	case "pause", "resume":
		return pauseResume(ctx, cmd, args, env)
	}
	return usagef("unknown command %q", cmd)
}

// client finds the server and token: flag, then environment, then
// config. Without a server it uses the dispatcher's socket in the
// config's state dir when there is one, else dispatcher.listen.
func client(env *Env) (*api.Client, error) {
	server, token, pin := env.Server, env.Token, env.TLSFingerprint
	if server == "" {
		server = env.Getenv("DISPATCH_TUI_SERVER")
	}
	if token == "" {
		token = env.Getenv("DISPATCH_TUI_TOKEN")
	}
	if pin == "" {
		pin = env.Getenv("DISPATCH_TUI_TLS_FINGERPRINT")
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

// IsSocket reports whether a server address names a unix socket.
func IsSocket(server string) bool {
	return strings.HasPrefix(server, "unix:") || strings.HasPrefix(server, "/")
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

// explain turns a transport error into advice.
func explain(c *api.Client, err error) error {
	var ne net.Error
	var oe *net.OpError
	var ue x509.UnknownAuthorityError
	switch {
	case errors.As(err, &ue):
		return fmt.Errorf("cannot verify the dispatcher at %s: %v (for the self-signed certificate the daemon makes, pass the fingerprint it logs: --tls-fingerprint or DISPATCH_TUI_TLS_FINGERPRINT)", c.Where(), err)
	case strings.Contains(err.Error(), "fingerprint"):
		return fmt.Errorf("refusing the dispatcher at %s: %v", c.Where(), err)
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
			msg += "\n  instance types: " + strings.Join(ae.Types, "\n                  ")
		}
		return errors.New(msg)
	}
	return err
}

// newFlags makes a command's flag set; --server, --token and --config are
// accepted after the command name too.
func newFlags(name string, env *Env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.StringVar(&env.Server, "server", env.Server, "dispatcher API: unix:PATH, https://host:port or http://host:port (default $DISPATCH_TUI_SERVER, then the socket in the state dir, then dispatcher.listen)")
	fs.StringVar(&env.Token, "token", env.Token, "API token for TCP (default $DISPATCH_TUI_TOKEN, then the config)")
	fs.StringVar(&env.TLSFingerprint, "tls-fingerprint", env.TLSFingerprint, "SHA-256 of the server's certificate to pin (default $DISPATCH_TUI_TLS_FINGERPRINT)")
	fs.StringVar(&env.ConfigPath, "config", env.ConfigPath, "config file")
	return fs
}

// parse parses flags, turning flag errors into usage errors.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%v", err)
	}
	return nil
}

type envFlag map[string]string

func (e envFlag) String() string { return "" }
func (e envFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want K=V, got %q", s)
	}
	e[k] = v
	return nil
}

type sizeFlag struct{ v *int64 }

func (s sizeFlag) String() string { return "" }
func (s sizeFlag) Set(v string) error {
	n, err := config.ParseSize(v)
	if err != nil {
		return err
	}
	*s.v = n
	return nil
}

func submit(ctx context.Context, args []string, env *Env) error {
	fs := newFlags("submit", env)
	var spec queue.Spec
	spec.Env = envFlag{}
	fs.IntVar(&spec.RuntimeConstraints.VCPUs, "vcpus", 1, "vCPUs")
	fs.Var(sizeFlag{&spec.RuntimeConstraints.RAM}, "ram", "RAM, e.g. 2GiB")
	fs.Var(sizeFlag{&spec.RuntimeConstraints.Scratch}, "scratch", "scratch disk, e.g. 10GiB")
	fs.IntVar(&spec.RuntimeConstraints.GPUs, "gpus", 0, "GPUs")
	prio := fs.Int("priority", 1, "priority (higher first; 0 = do not schedule)")
	fs.IntVar(&spec.MaxAttempts, "max-attempts", 0, "attempts before giving up (0 = config default)")
	fs.StringVar(&spec.RestartPolicy, "restart", "never", "restart policy: never or on-failure")
	fs.StringVar(&spec.Name, "name", "", "name")
	fs.StringVar(&spec.Image, "image", "", "container image (runs with docker)")
	maxRun := fs.Duration("max-run-time", 0, "kill the container after this long (0 = no limit)")
	fs.Var(envFlag(spec.Env), "env", "environment variable K=V (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: dispatch-tui submit [flags] -- CMD ARGS...")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	spec.Command = fs.Args()
	if len(spec.Command) == 0 {
		return usagef("no command: dispatch-tui submit [flags] -- CMD ARGS...")
	}
	if *prio < 0 {
		return usagef("--priority must not be negative")
	}
	spec.Priority = prio
	spec.Scheduling.MaxRunTime = queue.Duration(*maxRun)
	if len(spec.Env) == 0 {
		spec.Env = nil
	}
	c, err := client(env)
	if err != nil {
		return err
	}
	got, err := c.Submit(ctx, spec)
	if err != nil {
		return explain(c, err)
	}
	fmt.Fprintln(env.Stdout, got.ID)
	return nil
}

func list(ctx context.Context, args []string, env *Env) error {
	if len(args) == 0 {
		return usagef("what to list: ls instances|containers|types|events [-o table|json]")
	}
	what := args[0]
	fs := newFlags("ls "+what, env)
	out := fs.String("o", "table", "output: table or json")
	var q api.ListQuery
	var states string
	var since uint64
	if what == "containers" {
		fs.StringVar(&states, "state", "", "only these states, comma-separated")
		fs.StringVar(&q.Q, "q", "", "only containers whose id, name or command contains this")
		fs.StringVar(&q.Sort, "sort", "", "sort: priority, -priority, created, -created, name, state")
		fs.IntVar(&q.Limit, "limit", 0, "at most this many (0 = all)")
		fs.IntVar(&q.Offset, "offset", 0, "skip this many")
	}
	if what == "events" {
		fs.Uint64Var(&since, "since", 0, "only events after this sequence number")
		fs.IntVar(&q.Limit, "limit", 1000, "at most this many")
	}
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if *out != "table" && *out != "json" {
		return usagef("-o must be table or json")
	}
	if states != "" {
		q.States = strings.Split(states, ",")
	}
	c, err := client(env)
	if err != nil {
		return err
	}
	var items any
	switch what {
	case "instances":
		v, err := c.Instances(ctx)
		if err != nil {
			return explain(c, err)
		}
		items = v
		if *out == "table" {
			return instanceTable(env.Stdout, v)
		}
	case "containers":
		v, n, err := c.Containers(ctx, q)
		if err != nil {
			return explain(c, err)
		}
		if *out == "json" {
			return writeJSON(env.Stdout, map[string]any{"items": v, "items_available": n})
		}
		return containerTable(env.Stdout, v, n)
	case "types":
		v, err := c.Types(ctx)
		if err != nil {
			return explain(c, err)
		}
		items = v
		if *out == "table" {
			return typeTable(env.Stdout, v)
		}
	case "events":
		v, err := c.Events(ctx, since, q.Limit)
		if err != nil {
			return explain(c, err)
		}
		items = v
		if *out == "table" {
			return eventTable(env.Stdout, v)
		}
	default:
		return usagef("cannot list %q: instances, containers, types or events", what)
	}
	return writeJSON(env.Stdout, map[string]any{"items": items})
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// isContainerID tells container ids ("c-" + 16 hex) from instance ids.
func isContainerID(id string) bool {
	if len(id) != 18 || !strings.HasPrefix(id, "c-") {
		return false
	}
	for _, r := range id[2:] {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

func verb(ctx context.Context, name string, args []string, env *Env) error {
	fs := newFlags(name, env)
	reason := fs.String("reason", "", "why (recorded in the event log)")
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "usage: dispatch-tui %s [--reason TEXT] ID...\n", name)
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("no id given: dispatch-tui %s [--reason TEXT] ID...", name)
	}
	c, err := client(env)
	if err != nil {
		return err
	}
	var failed []string
	for _, id := range fs.Args() {
		container := isContainerID(id)
		switch {
		case container && (name == "drain" || name == "run"):
			return usagef("%s applies to instances; %s is a container", name, id)
		case !container && name == "release":
			return usagef("release applies to containers; %s is not a container id", id)
		}
		var state string
		if container {
			got, err := c.ContainerVerb(ctx, id, name, *reason)
			if err != nil {
				fmt.Fprintf(env.Stderr, "%s: %v\n", id, explain(c, err))
				failed = append(failed, id)
				continue
			}
			state = string(got.State)
			if got.Held {
				state += " (held)"
			}
		} else {
			got, err := c.InstanceVerb(ctx, id, name, *reason)
			if err != nil {
				fmt.Fprintf(env.Stderr, "%s: %v\n", id, explain(c, err))
				failed = append(failed, id)
				continue
			}
			state = string(got.State) + " " + string(got.IdleBehavior)
		}
		fmt.Fprintf(env.Stdout, "%s\t%s\t%s\n", id, name, state)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d failed: %s", len(failed), fs.NArg(), strings.Join(failed, " "))
	}
	return nil
}

func priority(ctx context.Context, args []string, env *Env) error {
	fs := newFlags("priority", env)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("usage: dispatch-tui priority CONTAINER N")
	}
	n, err := strconv.Atoi(fs.Arg(1))
	if err != nil || n < 0 {
		return usagef("priority must be a whole number >= 0, got %q", fs.Arg(1))
	}
	c, err := client(env)
	if err != nil {
		return err
	}
	got, err := c.SetPriority(ctx, fs.Arg(0), n)
	if err != nil {
		return explain(c, err)
	}
	fmt.Fprintf(env.Stdout, "%s\tpriority %d\t%s\n", got.ID, got.Priority, got.State)
	return nil
}

func logs(ctx context.Context, args []string, env *Env) error {
	fs := newFlags("logs", env)
	tail := fs.Int("tail", 0, "only the last N lines (0 = all)")
	follow := fs.Bool("follow", false, "keep printing new output until the container ends")
	fs.BoolVar(follow, "f", false, "same as --follow")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("usage: dispatch-tui logs CONTAINER [--tail N] [--follow]")
	}
	if *tail < 0 {
		return usagef("--tail must not be negative")
	}
	c, err := client(env)
	if err != nil {
		return err
	}
	if err := c.Logs(ctx, fs.Arg(0), *tail, *follow, env.Stdout); err != nil {
		return explain(c, err)
	}
	return nil
}

func pauseResume(ctx context.Context, name string, args []string, env *Env) error {
	fs := newFlags(name, env)
	reason := fs.String("reason", "", "why (recorded in the event log)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("usage: dispatch-tui %s [--reason TEXT]", name)
	}
	c, err := client(env)
	if err != nil {
		return err
	}
	if name == "pause" {
		err = c.Pause(ctx, *reason)
	} else {
		err = c.Resume(ctx, *reason)
	}
	if err != nil {
		return explain(c, err)
	}
	fmt.Fprintf(env.Stdout, "scheduler %sd\n", name)
	return nil
}

// ---- tables (readable at 80 columns) ----

func tw(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// clip escapes s for the terminal (names, commands, reasons and errors
// come from users and programs: their control characters must not reach
// it) and cuts it to n characters.
func clip(s string, n int) string {
	s = termsafe.Escape(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := time.Since(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String()
}
