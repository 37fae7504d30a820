// [cloud.script]: the script driver's commands (cloud/script), their keys
// and their checks.

package config

import (
	"strings"
	"time"
	"unicode"
)

// ScriptDriver is [cloud.script]: the driver that runs the operator's own
// commands to create, list and destroy instances.
type ScriptDriver struct {
	// Each command is an argv, run without a shell; a program named with
	// a relative path containing a slash is relative to the config file.
	Create, List, Destroy []string
	SetTags               []string // optional
	// Env is the commands' environment besides DISPATCH_TUI_*: "NAME"
	// passes the dispatcher's value, "NAME=value" sets one.
	Env []string
	// Timeout bounds each call; a command still running then is killed.
	Timeout   time.Duration
	AdminUser string
}

var scriptKeys = []*row{
	commented(argv("cloud.script.create", func(c *Config, _ int) *[]string { return &c.Cloud.Script.Create },
		"starts an instance", scriptCommand(true))),
	commented(argv("cloud.script.list", func(c *Config, _ int) *[]string { return &c.Cloud.Script.List },
		"prints the instances carrying the owner tag", scriptCommand(true))),
	commented(argv("cloud.script.destroy", func(c *Config, _ int) *[]string { return &c.Cloud.Script.Destroy },
		"shuts an instance down", scriptCommand(true))),
	commented(argv("cloud.script.set_tags", func(c *Config, _ int) *[]string { return &c.Cloud.Script.SetTags },
		"replaces an instance's tags (optional)", scriptCommand(false))),
	strs("cloud.script.env", []string{"PATH", "HOME"}, func(c *Config, _ int) *[]string { return &c.Cloud.Script.Env },
		`the commands' environment: "NAME" passes the dispatcher's value, "NAME=value" sets one`, scriptEnv),
	duration("cloud.script.timeout", 5*time.Minute, func(c *Config, _ int) *time.Duration { return &c.Cloud.Script.Timeout },
		"each call is killed after this long", atLeastASecond),
	str("cloud.script.admin_user", "dispatch-tui", func(c *Config, _ int) *string { return &c.Cloud.Script.AdminUser },
		"user the user_data creates and the dispatcher logs in as", userName),
}

// scriptCommand checks a command: required by driver "script" or not, and
// starting with a program.
func scriptCommand(required bool) check[[]string] {
	return func(v []string, s *site) {
		switch {
		case len(v) == 0 && required && s.c.Cloud.Driver == "script":
			s.bad("required by driver \"script\": the command as an array, like [\"/etc/dispatch-tui/cloud\", \"%s\"]", s.key[strings.LastIndexByte(s.key, '.')+1:])
		case len(v) > 0 && v[0] == "":
			s.bad("must start with the program to run, not \"\"")
		case len(v) > 0 && strings.IndexFunc(v[0], unicode.IsControl) >= 0:
			s.bad("must not contain a control character such as NUL or a newline in the program's name (got %q)", v[0])
		}
	}
}

func atLeastASecond(v time.Duration, s *site) {
	if v < time.Second {
		s.bad("must be at least 1s (got %v)", v)
	}
}

func scriptEnv(env []string, s *site) {
	seen := map[string]int{}
	for i, e := range env {
		name, _, _ := strings.Cut(e, "=")
		switch j, dup := seen[name]; {
		case !envName(name):
			s.bad("element %d: %q is not NAME or NAME=value (a name is letters, digits and _, not starting with a digit)", i, e)
		case strings.HasPrefix(name, "DISPATCH_TUI_"):
			s.bad("element %d: DISPATCH_TUI_* variables are set by the dispatcher (got %q)", i, name)
		case dup:
			s.bad("element %d: %s is also element %d", i, name, j)
		default:
			seen[name] = i
		}
	}
}

// envName reports whether s is a portable environment variable name.
func envName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9'
		if !ok {
			return false
		}
	}
	return true
}
