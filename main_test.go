package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/version"
)

func TestCheckConfig(t *testing.T) {
	dir := t.TempDir()
	// No config for check-config to find by itself: cwd is the repo
	// (no dispatch-tui.toml), the user's config directory an empty one.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{"example", []string{"check-config", "config.toml.example"}, 0, "config.toml.example: ok", ""},
		{"unknown key", []string{"check-config", write("bad.toml", "[dispatcher]\nmax_instances = 3\nmax_instanse = 4\n")}, 1, "", "bad.toml:3: unknown key dispatcher.max_instanse"},
		{"bad value", []string{"check-config", write("bad2.toml", "[dispatcher]\n\nmax_instances = 0\n")}, 1, "", "bad2.toml:3: dispatcher.max_instances"},
		{"syntax", []string{"check-config", write("bad3.toml", "[dispatcher]\nlisten = \"x\" y\n")}, 1, "", "bad3.toml:2:"},
		{"missing file", []string{"check-config", filepath.Join(dir, "nope.toml")}, 1, "", "nope.toml"},
		{"no file anywhere", []string{"check-config"}, 2, "", "no config file to check: name one"},
		{"two files", []string{"check-config", "a.toml", "b.toml"}, 2, "", "want one FILE, got 2 arguments"},
		{"--config names it", []string{"--config", write("flag.toml", "[dispatcher]\nmax_instances = 0\n"), "check-config"}, 1, "", "flag.toml:2: dispatcher.max_instances"},
		{"--config and FILE disagree", []string{"--config", "a.toml", "check-config", "b.toml"}, 2, "", "two files to check: b.toml and --config a.toml; name one"},
		{"unknown command", []string{"frobnicate"}, 2, "", "unknown command"},
		{"keys bound twice", []string{"check-config", write("keys.toml", "[tui.keys]\nhold = \"d\"\n")}, 1, "", "[tui.keys]"},
		{"NUL in state_dir", []string{"check-config", write("nul.toml", "[dispatcher]\nstate_dir = \"/tmp/a\\u0000b\"\n")}, 1, "", "nul.toml:2: dispatcher.state_dir: must not contain a control character"},
		{"old driver name", []string{"check-config", write("old.toml", "[cloud]\ndriver = \"cloudtest\"\n")}, 0, "old.toml: ok", `old.toml:2: cloud.driver: "cloudtest" is the old name of the "fake" driver`},
		{"keys ok", []string{"check-config", write("keys2.toml", "[tui.keys]\nhold = \"x\"\n")}, 0, "keys2.toml: ok", ""},
		{"store url of another database", []string{"check-config", write("store.toml", "[store]\nurl = \"mysql://db/x\"\n")}, 1, "", "store.toml:2: store.url: want a URL starting postgres://"},
		{"key a sort takes", []string{"check-config", write("keys3.toml", "[tui.keys]\nhold = \"H\"\n")}, 1, "", "sorts by HOST"},
		{"daemon and connect", []string{"--daemon", "--connect", "unix:/nowhere"}, 2, "", "--daemon runs the engine here: it excludes --connect"},
		{"daemon and connect, one dash", []string{"-daemon", "-connect", "unix:/nowhere"}, 2, "", "--daemon runs the engine here"},
		{"connect and demo", []string{"--connect", "unix:/nowhere", "--demo"}, 2, "", "exclude each other"},
		{"profile without daemon", []string{"--profile", "/tmp/nowhere", "--demo"}, 2, "", "--profile is a --daemon and --connect setting"},
		{"help command", []string{"help", "submit"}, 0, "--health-cmd", ""},
		{"help examples", []string{"ls", "--help"}, 0, "xargs dispatch-tui hold", ""},
		{"completion bash", []string{"completion", "bash"}, 0, "bash completion V2 for dispatch-tui", ""},
		{"completion zsh", []string{"completion", "zsh"}, 0, "#compdef dispatch-tui", ""},
		{"completion fish", []string{"completion", "fish"}, 0, "complete -c dispatch-tui", ""},
		{"unknown flag", []string{"version", "--verbose"}, 2, "", "unknown flag: --verbose"},
		{"version", []string{"version"}, 0, "dispatch-tui " + version.String() + "\n", ""},
		{"--version", []string{"--version"}, 0, "dispatch-tui " + version.String() + "\n", ""},
		{"-v", []string{"-v"}, 0, "dispatch-tui " + version.String() + "\n", ""},
		{"bad container state", []string{"ls", "containers", "--state", "Bogus"}, 2, "", `--state "Bogus": want one of Queued`},
		{"bad sort", []string{"ls", "containers", "--sort", "bogus"}, 2, "", `--sort "bogus": want one of priority`},
		{"bad instance state", []string{"ls", "instances", "--state", "bogus"}, 2, "", `--state "bogus": want one of booting`},
		{"bad selector state", []string{"kill", "--state", "bogus"}, 2, "", `--state "bogus": want one of Queued`},
		{"negative priority", []string{"priority", "c-0123456789abcdef", "-1"}, 2, "", "priority must be a whole number >= 0"},
		{"ram without a unit", []string{"submit", "--ram", "512", "--", "true"}, 2, "", "512 without a unit is 512 bytes: write 512MiB"},
		{"connect to a bare word", []string{"--connect", "foo"}, 2, "", `--connect server "foo": want unix:PATH`},
		{"bad duration", []string{"submit", "--max-run-time", "banana", "--", "true"}, 2, "", "want a duration such as 90s, 10m or 2h"},
		{"simulate bad flag", []string{"simulate", "--containers", "0"}, 2, "", "--containers >= 1"},
		{"cloudtest bad flag", []string{"cloudtest", "--timeout", "0s"}, 2, "", "usage: dispatch-tui cloudtest"},
		{"cloudtest extra argument", []string{"cloudtest", "now"}, 2, "", "cloudtest"},
		{"cloudtest", []string{"--config", write("ct.toml", "[dispatcher]\nstate_dir = \""+filepath.Join(dir, "state")+"\"\n[cloud]\ndriver = \"fake\"\n"), "cloudtest"}, 0, "cloudtest: ok, every step held", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			if code != tc.code || !strings.Contains(out.String(), tc.inStdout) || !strings.Contains(errb.String(), tc.inStderr) ||
				code == 2 && strings.Count(errb.String(), "\n") != 2 {
				t.Fatalf("run(%q) = %d\nstdout: %s\nstderr: %s\nwant %d, stdout containing %q, stderr containing %q (a usage error: one line and a hint)",
					tc.args, code, out.String(), errb.String(), tc.code, tc.inStdout, tc.inStderr)
			}
		})
	}
}

func TestApplyMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	for _, tc := range []struct {
		name      string
		env       string
		limit     int64
		wantLimit int64 // after; -1 = unchanged
		wantLog   string
	}{
		{"from config", "", 160 << 20, 160 << 20, "memory limit from dispatcher.memory_limit"},
		{"GOMEMLIMIT wins", "300MiB", 160 << 20, -1, "memory limit from GOMEMLIMIT"},
		{"off", "", 0, -1, "no memory limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(prev)
			t.Setenv("GOMEMLIMIT", tc.env)
			var buf bytes.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			applyMemoryLimit(ctx, slog.New(slog.NewJSONHandler(&buf, nil)), tc.limit)
			want := tc.wantLimit
			if want < 0 {
				want = prev
			}
			if got := debug.SetMemoryLimit(-1); got != want {
				t.Errorf("limit %d, want %d", got, want)
			}
			if !strings.Contains(buf.String(), tc.wantLog) {
				t.Errorf("log %q, want %q", buf.String(), tc.wantLog)
			}
		})
	}
}

// TestTopLevelErrorsAreEscaped: the console's, check-config's and
// cloudtest's errors quote paths and addresses the user typed; an escape
// sequence in them reaches the terminal written out, not raw.
func TestTopLevelErrorsAreEscaped(t *testing.T) {
	const esc = "\x1b[31m"
	missing := filepath.Join(t.TempDir(), "no"+esc+".toml")
	for _, args := range [][]string{
		{"--config", missing},
		{"--connect", "unix:" + missing},
		{"check-config", missing},
		{"cloudtest", "--config", missing},
		{"simulate", "--config", missing},
	} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code == 0 || strings.Contains(out.String()+errb.String(), "\x1b") || !strings.Contains(errb.String(), `\x1b`) {
			t.Errorf("run(%q) = %d\nstdout: %q\nstderr: %q\nwant an error with the escape written out, no raw ESC", args, code, out.String(), errb.String())
		}
	}
}

// TestConnectToMissingSocket: --connect to a socket that is not there says
// so, and what to do, without Go's dial error.
func TestConnectToMissingSocket(t *testing.T) {
	var out, errb bytes.Buffer
	sock := filepath.Join(t.TempDir(), "none.sock")
	code := run([]string{"--connect", "unix:" + sock}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "no dispatcher socket at "+sock) || strings.Contains(errb.String(), "dial unix") {
		t.Fatalf("exit %d, stderr %q: want exit 1 saying no dispatcher socket is there, without the dial error", code, errb.String())
	}
}

// TestBashCompletionWithoutThePackage: the bash script works in a shell
// without bash-completion (no _get_comp_words_by_ref of its own).
func TestBashCompletionWithoutThePackage(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("bash is missing")
		}
		t.Skip("no bash")
	}
	var script, errb bytes.Buffer
	if code := run([]string{"completion", "bash"}, &script, &errb); code != 0 {
		t.Fatalf("completion bash: exit %d: %s", code, errb.String())
	}
	path := filepath.Join(t.TempDir(), "c.bash")
	if err := os.WriteFile(path, script.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	// What the script does first when asked to complete "ls con".
	probe := `source "$1"
COMP_WORDS=(dispatch-tui ls con); COMP_CWORD=2
f() { local cur prev words cword; __dispatch-tui_init_completion -n =: || exit 9; echo "$cur|$prev|$cword|${words[*]}"; }
f`
	out, err := exec.Command(bash, "--norc", "--noprofile", "-c", probe, "probe", path).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "con|ls|2|dispatch-tui ls con" {
		t.Fatalf("bash without bash-completion: %v\n%s", err, out)
	}
}

// Without FILE or --config, check-config checks the file the dispatcher
// would read.
func TestCheckConfigFindsTheDispatchersFile(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	p := filepath.Join(xdg, "dispatch-tui", "config.toml")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("[dispatcher]\nmax_instances = 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"check-config"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), p+":2: dispatcher.max_instances") {
		t.Fatalf("check-config = %d\nstdout: %s\nstderr: %s\nwant 1 and the error in %s", code, out.String(), errb.String(), p)
	}
}

// TestDaemonStopsOnTheProcessContext: the daemon runs on the context run
// set up for SIGINT and SIGTERM, not one of its own registered later, so
// a signal that arrives while it starts is never taken by an unread
// context (the daemon then ran on: TestDaemonStopsCleanlyOnSignals…
// hung once under make test). Its context ended, it stops cleanly.
func TestDaemonStopsOnTheProcessContext(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	body := fmt.Sprintf("[dispatcher]\nstate_dir = %q\n\n[cloud]\ndriver = \"local\"\n", filepath.Join(dir, "state"))
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var logs bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- daemonCmd(ctx, cfg, "", &logs) }()
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(logs.String(), `"msg":"daemon stopped"`) {
			t.Fatalf("daemon exit %d, want 0 with a clean stop logged:\n%s", code, logs.String())
		}
	case <-time.After(wait.Budget(2 * time.Minute)):
		t.Fatalf("the daemon did not stop within 2m of its context ending:\n%s", logs.String())
	}
}
