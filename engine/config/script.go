// [cloud.script]: the script driver's commands, defaults and checks.

package config

// [cloud.script]: the script driver's commands (cloud/script), their
// defaults and their checks.

import (
	"strings"
	"time"
	"unicode"

	"dispatch-tui/cloud"
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

type rawScript struct {
	Create    value `toml:"create"`
	List      value `toml:"list"`
	Destroy   value `toml:"destroy"`
	SetTags   value `toml:"set_tags"`
	Env       value `toml:"env"`
	Timeout   value `toml:"timeout"`
	AdminUser value `toml:"admin_user"`
}

// defaultScript is [cloud.script] when the file leaves it out.
func defaultScript() ScriptDriver {
	return ScriptDriver{
		Env:       []string{"PATH", "HOME"},
		Timeout:   5 * time.Minute,
		AdminUser: "dispatch-tui",
	}
}

// resolveScriptPaths makes the programs named relative to the config file
// absolute: the dispatcher's working directory is no guide.
func resolveScriptPaths(s *ScriptDriver, dir string) {
	for _, argv := range [][]string{s.Create, s.List, s.Destroy, s.SetTags} {
		if len(argv) > 0 && strings.Contains(argv[0], "/") {
			argv[0] = localPath(dir, argv[0])
		}
	}
}

// validateScript checks [cloud.script]: always its shape, and when the
// driver is "script" that its required commands are there.
func (v *validator) validateScript(cl *Cloud) {
	s := &cl.Script
	for _, c := range []struct {
		argv     *[]string
		required bool
	}{{&s.Create, true}, {&s.List, true}, {&s.Destroy, true}, {&s.SetTags, false}} {
		switch {
		case len(*c.argv) == 0 && c.required && cl.Driver == "script":
			v.addAt(c.argv, "required by driver \"script\": the command as an array, like [\"/etc/dispatch-tui/cloud\", \"%s\"]", v.keys.of(c.argv)[len("cloud.script."):])
		case len(*c.argv) > 0 && (*c.argv)[0] == "":
			v.addAt(c.argv, "must start with the program to run, not \"\"")
		case len(*c.argv) > 0 && strings.IndexFunc((*c.argv)[0], unicode.IsControl) >= 0:
			v.addAt(c.argv, "must not contain a control character such as NUL or a newline in the program's name (got %q)", (*c.argv)[0])
		}
	}
	if s.Timeout < time.Second {
		v.addAt(&s.Timeout, "must be at least 1s (got %v)", s.Timeout)
	}
	if !cloud.PortableUserName(s.AdminUser) {
		v.addAt(&s.AdminUser, "must be a user name: a-z, 0-9, _ and -, starting with a letter or _, at most 32 (got %q)", s.AdminUser)
	}
	seen := map[string]int{}
	for i, e := range s.Env {
		name, _, _ := strings.Cut(e, "=")
		switch j, dup := seen[name]; {
		case !envName(name):
			v.addAt(&s.Env, "element %d: %q is not NAME or NAME=value (a name is letters, digits and _, not starting with a digit)", i, e)
		case strings.HasPrefix(name, "DISPATCH_TUI_"):
			v.addAt(&s.Env, "element %d: DISPATCH_TUI_* variables are set by the dispatcher (got %q)", i, name)
		case dup:
			v.addAt(&s.Env, "element %d: %s is also element %d", i, name, j)
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
