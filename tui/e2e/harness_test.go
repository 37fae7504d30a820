// Package e2e drives the real dispatch-tui binary in tmux: the
// TUI is started in a detached tmux session of a known size, keys are sent
// with send-keys and the screen is read back with capture-pane. Every test
// has its own sandbox, tmux server, port and state dir, and spends most of
// its time waiting for screens: they run in parallel.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/launch"
)

// binary is the dispatch-tui executable built once in TestMain ("" when
// tmux is missing outside CI: the tests skip).
var binary string

var tmuxPath string

func TestMain(m *testing.M) {
	tmuxPath, _ = exec.LookPath("tmux")
	if tmuxPath == "" {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "tui/e2e: tmux is not installed (CI=true): the tests fail")
		}
		os.Exit(m.Run()) // each test skips (or fails under CI)
	}
	dir, err := os.MkdirTemp("", "dispatch-tui-tmux-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if binary, err = enginetest.BuildBinary(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needTmux skips the test when tmux is missing, unless CI=true.
func needTmux(t *testing.T) {
	t.Helper()
	if tmuxPath == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed (apt-get install tmux); CI=true, so this is a failure")
		}
		t.Skip("tmux is not installed (apt-get install tmux): skipping the tmux end-to-end tests")
	}
}

// sandbox is an environment for the binary: an empty working directory,
// HOME, XDG_CONFIG_HOME and TMPDIR of its own, so that no user config is
// found and --demo's temporary state dir lands where the test can find it.
type sandbox struct {
	root           string
	dir, home, tmp string
	env            []string
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	root := t.TempDir()
	s := &sandbox{root: root, dir: filepath.Join(root, "cwd"), home: filepath.Join(root, "home"), tmp: filepath.Join(root, "tmp")}
	for _, d := range []string{s.dir, s.home, s.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + s.home,
		"XDG_CONFIG_HOME=" + filepath.Join(s.home, ".config"),
		"TMPDIR=" + s.tmp,
		"LANG=C.UTF-8",
		"TERM=xterm-256color",
		"SHELL=/bin/sh",
	}
	return s
}

var sessionSeq atomic.Int64

// term is one tmux session (on a tmux server of its own) running a
// command.
type term struct {
	t      *testing.T
	sb     *sandbox
	socket string // tmux -S: a server of its own, its socket in the sandbox
	name   string // session name
	last   string // last capture, for failure messages
}

// shq quotes s for sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// startTerm starts args (the binary and its arguments) in a new detached
// tmux session of w×h cells. When the program exits, the pane prints
// EXITED:<status> and runs an interactive shell, so the test can see the
// terminal handed back. The session and its server are killed in cleanup.
func startTerm(t *testing.T, sb *sandbox, w, h int, extraEnv []string, args ...string) *term {
	t.Helper()
	n := sessionSeq.Add(1)
	tm := &term{
		t: t, sb: sb,
		socket: filepath.Join(sb.root, fmt.Sprintf("tmux-%d.sock", n)),
		name:   fmt.Sprintf("dtui%d-%d", os.Getpid(), n),
	}
	var cmd strings.Builder
	cmd.WriteString("env")
	for _, e := range extraEnv {
		cmd.WriteString(" " + shq(e))
	}
	var prog strings.Builder
	for i, a := range args {
		if i > 0 {
			prog.WriteByte(' ')
		}
		prog.WriteString(shq(a))
	}
	cmd.WriteString(" sh -c " + shq(prog.String()+"; echo EXITED:$?; export PS1='e2e-shell$ '; exec sh"))
	t.Cleanup(func() {
		tm.tmux("kill-session", "-t", tm.name)
		tm.tmux("kill-server")
	})
	if out, err := tm.tmux("new-session", "-d", "-s", tm.name, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h),
		"-c", sb.dir, cmd.String()); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	return tm
}

func (tm *term) tmux(args ...string) (string, error) {
	c := exec.Command(tmuxPath, append([]string{"-u", "-f", "/dev/null", "-S", tm.socket}, args...)...)
	c.Env = tm.sb.env
	c.Dir = tm.sb.dir
	out, err := c.CombinedOutput()
	return string(out), err
}

// capture returns the visible screen.
func (tm *term) capture() string {
	tm.t.Helper()
	out, err := tm.tmux("capture-pane", "-p", "-t", tm.name)
	if err != nil {
		tm.t.Fatalf("tmux capture-pane: %v\n%s\nlast screen:\n%s", err, out, tm.last)
	}
	tm.last = out
	return out
}

// keys sends tmux key names (Enter, Tab, Escape, Space, or single keys).
func (tm *term) keys(ks ...string) {
	tm.t.Helper()
	if out, err := tm.tmux(append([]string{"send-keys", "-t", tm.name}, ks...)...); err != nil {
		tm.t.Fatalf("tmux send-keys %q: %v\n%s", ks, err, out)
	}
}

// typeText sends s literally.
func (tm *term) typeText(s string) {
	tm.t.Helper()
	if out, err := tm.tmux("send-keys", "-t", tm.name, "-l", s); err != nil {
		tm.t.Fatalf("tmux send-keys -l %q: %v\n%s", s, err, out)
	}
}

// resize sets the window's size.
func (tm *term) resize(w, h int) {
	tm.t.Helper()
	if out, err := tm.tmux("resize-window", "-t", tm.name, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h)); err != nil {
		tm.t.Fatalf("tmux resize-window: %v\n%s", err, out)
	}
}

// paneFlag returns a tmux format of the pane, e.g. #{alternate_on}.
func (tm *term) paneFlag(format string) string {
	tm.t.Helper()
	out, err := tm.tmux("display-message", "-p", "-t", tm.name, format)
	if err != nil {
		tm.t.Fatalf("tmux display-message: %v\n%s", err, out)
	}
	return strings.TrimSpace(out)
}

// waitScreen polls the screen until cond holds and returns it; it fails
// the test with the last screen after timeout.
func (tm *term) waitScreen(what string, timeout time.Duration, cond func(screen string) bool) string {
	tm.t.Helper()
	var s string
	seen := func() string { return "screen:\n" + s }
	wait.With{Seen: seen}.Until(tm.t, "the screen to show "+what, timeout, func() bool {
		s = tm.capture()
		return cond(s)
	})
	return s
}

// waitText waits for the screen to contain s.
func (tm *term) waitText(s string, timeout time.Duration) string {
	tm.t.Helper()
	return tm.waitScreen(fmt.Sprintf("%q", s), timeout, func(sc string) bool { return strings.Contains(sc, s) })
}

// row returns the table row of id: a line below the tab bar whose first
// column, after the two-cell gutter, is id ("" if none).
func row(screen, id string) string {
	if i := rowIndex(screen, id); i >= 0 {
		return strings.Split(screen, "\n")[i]
	}
	return ""
}

// rowIndex returns the line number of id's table row (-1 if none).
func rowIndex(screen, id string) int {
	for i, l := range strings.Split(screen, "\n") {
		if i < 7 {
			continue // header, flash, tab bar, table header
		}
		if r := []rune(l); len(r) > 2 && strings.HasPrefix(string(r[2:]), id+" ") {
			return i
		}
	}
	return -1
}

func line(screen string, i int) string {
	ls := strings.Split(screen, "\n")
	if i < len(ls) {
		return ls[i]
	}
	return ""
}

var wordRE = regexp.MustCompile(`\S+`)

// fields splits a table row into its words.
func fields(l string) []string { return wordRE.FindAllString(l, -1) }

// dialogOpen reports whether a confirmation dialog is on screen.
func dialogOpen(screen string) bool {
	return strings.Contains(screen, "tab: switch  enter: choose  esc: cancel")
}

// quit presses q and checks that the program exits 0 and hands the
// terminal back: the alternate screen is off, and the shell that follows
// reads a line and runs it (cooked mode with echo restored).
func (tm *term) quit() {
	tm.t.Helper()
	tm.keys("q")
	tm.waitText("EXITED:0", 20*time.Second)
	if f := tm.paneFlag("#{alternate_on}"); f != "0" {
		tm.t.Fatalf("alternate screen still on after quitting (alternate_on=%s)", f)
	}
	tm.waitText("e2e-shell$", 5*time.Second)
	tm.typeText("echo restored-$((20+22))")
	tm.keys("Enter")
	sc := tm.waitText("restored-42", 5*time.Second)
	if !strings.Contains(sc, "echo restored-$((20+22))") {
		tm.t.Fatalf("typed command not echoed after quitting (echo not restored?):\n%s", sc)
	}
}

// cli runs client commands of the binary against a dispatcher.
type cli struct {
	t   *testing.T
	env []string
}

func newCLI(t *testing.T, sb *sandbox, server, token string) *cli {
	return &cli{t: t, env: append(append([]string(nil), sb.env...), "DISPATCH_TUI_SERVER="+server, "DISPATCH_TUI_TOKEN="+token)}
}

func (c *cli) run(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = c.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("dispatch-tui %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

func (c *cli) ls(what string) map[string]enginetest.LsItem {
	c.t.Helper()
	return enginetest.LsItems(c.t, c.run("ls", what, "-o", "json"))
}

func (c *cli) submit(args ...string) string {
	c.t.Helper()
	return strings.TrimSpace(c.run(append([]string{"submit"}, args...)...))
}

func waitHealthy(t *testing.T, server string, timeout time.Duration) {
	t.Helper()
	wait.Until(t, "healthz of "+server, timeout, func() bool { return healthz(server) })
}

// healthz reports whether the API at server answers its health check
// within a few seconds: a port another test holds may take the connection
// and never answer, which must read as no answer, not hang the wait.
func healthz(server string) bool {
	resp, err := healthzClient.Get("http://" + server + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// writeConfig writes a config for the local driver with its state in
// stateDir, the API on listen with token, and a fast TUI refresh.
func writeConfig(t *testing.T, stateDir, listen, token string) string {
	t.Helper()
	body := fmt.Sprintf(`[dispatcher]
listen = %q
token = %q
state_dir = %q
max_instances = 4
max_containers_per_instance = 0
stale_lock_timeout = "20s"

[cloud]
driver = "local"
runner_path = %q
probe_interval = "200ms"
sync_interval = "1s"
timeout_idle = "1h"
max_concurrent_creates = 4
max_cloud_ops_per_second = 100
max_probes_per_second = 100

[cloud.local]
boot_delay = "100ms"

[[instance_type]]
name = "slot8"
vcpus = 8
ram = "16GiB"
scratch = "10GiB"
price = 0.1

[containers]
kill_grace = "1s"

[tui]
refresh = "250ms"
`, listen, token, stateDir, filepath.Join(stateDir, "dispatch-tui-runner"))
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// destroyInstances destroys the local-driver instances (and so their
// containers) of cfg's state dir, through an engine built on it. The
// process that owned the state may still be exiting: the state database is
// retried for a while.
func destroyInstances(t *testing.T, cfg *config.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deadline := time.Now().Add(wait.Budget(15 * time.Second))
	for {
		d, err := launch.New(launch.Options{Config: cfg, RunnerBinary: binary})
		if err == nil {
			insts, _ := d.Driver.Instances(ctx, nil)
			for _, i := range insts {
				if err := i.Destroy(ctx); err != nil {
					t.Logf("cleanup: destroy %s: %v", i.ID(), err)
				}
			}
			d.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Logf("cleanup: cannot open %s to destroy its instances: %v", cfg.Dispatcher.StateDir, err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var healthzClient = &http.Client{Timeout: 3 * time.Second}
