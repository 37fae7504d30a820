package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/tui/backend"
)

// TestMain lets the test binary serve as the runner the local driver
// deploys to its instances (it runs "<binary> runner ..."), and stops the
// PostgreSQL server store tests may have started (pgtest).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "runner" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(pgtest.Run(m))
}

// consoleToken is the operator token of writeConsoleConfig's TCP listener.
const consoleToken = "console-token"

// writeConsoleConfig writes a config serving the API on a free loopback
// port (and the socket) with its state in a temporary dir.
func writeConsoleConfig(t *testing.T, extra string) (path, stateDir string) {
	t.Helper()
	dir := t.TempDir()
	stateDir = filepath.Join(dir, "state")
	path = filepath.Join(dir, "config.toml")
	body := "[dispatcher]\nlisten = \"127.0.0.1:0\"\nstate_dir = \"" + stateDir + "\"\n" + extra
	if !strings.Contains(extra, "token") {
		body = strings.Replace(body, "[dispatcher]\n", "[dispatcher]\ntoken = \""+consoleToken+"\"\n", 1)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, stateDir
}

// logLine returns the first JSON log line with msg (and each of keys).
func logLine(t *testing.T, path, msg string, keys ...string) map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		if m["msg"] != msg {
			continue
		}
		has := true
		for _, k := range keys {
			_, ok := m[k]
			has = has && ok
		}
		if has {
			return m
		}
	}
	return nil
}

func TestConsoleInProcessAndConnect(t *testing.T) {
	cfgPath, stateDir := writeConsoleConfig(t, "[tui]\nrefresh = \"250ms\"\nread_only = true\n")
	c, err := startConsole(consoleFlags{configPath: cfgPath})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.close()
		}
	}()
	if _, ok := c.backend.(*backend.InProcess); !ok || c.backend.Describe() != "local (in-process)" {
		t.Errorf("backend %T %q", c.backend, c.backend.Describe())
	}
	if !c.cfg.TUI.ReadOnly || c.cfg.TUI.Refresh != 250*time.Millisecond {
		t.Errorf("[tui] not loaded: %+v", c.cfg.TUI)
	}
	ctx := context.Background()
	s, err := c.backend.Snapshot(ctx)
	if err != nil || s.Summary.Driver != "local" {
		t.Fatalf("snapshot: %v, %+v", err, s)
	}
	if err := c.backend.SetPaused(ctx, true, "test"); err != nil {
		t.Fatal(err)
	}

	// Logs go to the state dir, and the API is served.
	logPath := filepath.Join(stateDir, "dispatch-tui.log")
	if c.logPath != logPath {
		t.Errorf("logPath %q, want %q", c.logPath, logPath)
	}
	l := logLine(t, logPath, "api listening", "addr")
	if l == nil {
		t.Fatal("no \"api listening\" line in the log")
	}
	addr, _ := l["addr"].(string)
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	// --connect to it: the same state.
	t.Setenv("DISPATCH_TUI_TOKEN", "")
	rc, err := startConsole(consoleFlags{configPath: cfgPath, connect: addr})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := rc.backend.(*backend.Remote)
	if !ok || r.Refresh != 250*time.Millisecond || r.Describe() != "remote "+addr {
		t.Errorf("remote backend %T %+v", rc.backend, rc.backend)
	}
	rs, err := rc.backend.Snapshot(ctx)
	if err != nil || !rs.Summary.Paused {
		t.Fatalf("remote snapshot: %v, %+v", err, rs)
	}
	if err := rc.close(); err != nil {
		t.Error(err)
	}
	// --connect to its socket: no token, and the user's uid is the actor.
	sock := "unix:" + filepath.Join(stateDir, "dispatch-tui.sock")
	sc, err := startConsole(consoleFlags{configPath: cfgPath, connect: sock})
	if err != nil {
		t.Fatal(err)
	}
	if sc.readOnly != "" {
		t.Errorf("socket console read-only: %s", sc.readOnly)
	}
	if err := sc.backend.SetPaused(ctx, false, "socket"); err != nil {
		t.Fatal(err)
	}
	evs, _ := c.backend.Snapshot(ctx)
	if last := evs.Events[len(evs.Events)-1]; !strings.HasPrefix(last.Actor, fmt.Sprintf("uid:%d", os.Getuid())) {
		t.Errorf("resume over the socket recorded as %+v, want the uid", last)
	}

	closed = true
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	if logLine(t, logPath, "console stopped") == nil {
		t.Error("no \"console stopped\" line in the log")
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Error("API still served after close")
	}
	if _, err := os.Stat(stateDir); err != nil {
		t.Errorf("state dir gone: %v", err)
	}
}

func TestConsoleConnectToken(t *testing.T) {
	cfgPath, _ := writeConsoleConfig(t, "token = \"from-config\"\n")
	var got string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		io.WriteString(w, `{"actor":"token:x","role":"operator"}`)
	}))
	defer ts.Close()
	for _, tc := range []struct{ flag, env, want string }{
		{"flag", "env", "flag"},
		{"", "env", "env"},
		{"", "", "from-config"},
	} {
		t.Setenv("DISPATCH_TUI_TOKEN", tc.env)
		c, err := startConsole(consoleFlags{configPath: cfgPath, connect: ts.URL, token: tc.flag})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.backend.SetPaused(context.Background(), true, ""); err != nil {
			t.Fatal(err)
		}
		if got != "Bearer "+tc.want {
			t.Errorf("flag %q env %q: sent %q, want token %q", tc.flag, tc.env, got, tc.want)
		}
		c.close()
	}
}

func TestConsoleDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	// One instance, not the demo's eight: the demo keeps a lower
	// max_instances of the user's (simulate.DemoConfig), and each instance
	// first gets the runner deployed, a copy of this test binary (100 MB
	// when built with -race) through the local driver's SSH in this
	// process, where -race checks every buffer of it: eight copies made
	// the test 19–21 CPU-seconds, one makes it 4, and shows the same demo.
	cfgPath, _ := writeConsoleConfig(t, "max_instances = 1\n")
	c, err := startConsole(consoleFlags{configPath: cfgPath, demo: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := c.cfg.Dispatcher.StateDir
	if !strings.Contains(filepath.Base(dir), "dispatch-tui-demo-") || c.cfg.Cloud.Driver != "local" || c.cfg.Dispatcher.MaxInstances != 1 {
		t.Errorf("demo state dir %q, driver %q, max_instances %d (want the config's 1)", dir, c.cfg.Cloud.Driver, c.cfg.Dispatcher.MaxInstances)
	}
	// The runner's deploy over SSH on a loaded two-core machine took over
	// a minute, and at a load of 40 a fixed three minutes ran out: the
	// deadline is stretched by the load, as every wait of the tests is
	// (engine/enginetest/wait).
	stretch, why := wait.Stretch()
	within := time.Duration(float64(3*time.Minute) * stretch)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	// Subscribed before the first snapshot, so no change goes unseen: each
	// one is a reason to look again.
	changes := c.backend.Changes(ctx)
	var s *backend.Snapshot
	for {
		got, err := c.backend.Snapshot(ctx)
		if err == nil {
			s = got
		} else if ctx.Err() == nil {
			c.close()
			t.Fatal(err)
		}
		if s != nil && s.Summary.Containers[queue.Complete] > 0 {
			break
		}
		if _, ok := <-changes; !ok || ctx.Err() != nil {
			c.close()
			seen := "no snapshot"
			if s != nil {
				seen = fmt.Sprintf("%+v", s.Summary)
			}
			t.Fatalf("no demo container completed within %s (3m0s on a quiet machine%s); last seen: %s", within, why, seen)
		}
	}
	if len(s.Instances) == 0 {
		t.Error("no instances")
	}
	if err := c.close(); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("demo state dir left behind: %v", err)
	}
}

// TestConsoleConnectAsViewer: attached with a viewer token the console is
// read-only and says why; with an operator token it is not.
func TestConsoleConnectAsViewer(t *testing.T) {
	cfgPath, stateDir := writeConsoleConfig(t, "token = \"op-secret\"\n[[dispatcher.tokens]]\nname = \"bob\"\ntoken = \"bob-secret\"\n")
	c, err := startConsole(consoleFlags{configPath: cfgPath})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	l := logLine(t, filepath.Join(stateDir, "dispatch-tui.log"), "api listening", "addr")
	if l == nil {
		t.Fatal("no TCP listener in the log")
	}
	addr, _ := l["addr"].(string)
	for _, tc := range []struct{ token, want string }{
		{"bob-secret", "token:bob has the viewer role; verbs need an operator token"},
		{"op-secret", ""},
	} {
		rc, err := startConsole(consoleFlags{configPath: cfgPath, connect: addr, token: tc.token})
		if err != nil {
			t.Fatal(err)
		}
		if rc.readOnly != tc.want {
			t.Errorf("token %s: read-only %q, want %q", tc.token, rc.readOnly, tc.want)
		}
		err = rc.backend.SetPaused(context.Background(), true, "")
		if (err != nil) != (tc.want != "") {
			t.Errorf("token %s: pause: %v", tc.token, err)
		}
		rc.close()
	}
}

// TestConsoleThatCannotStartLeavesNoStateDir: a console whose API port is
// taken fails to start, saying so, and leaves no state dir it created; in a
// state dir that existed, its log keeps the error.
func TestConsoleThatCannotStartLeavesNoStateDir(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, exists := range []bool{false, true} {
		t.Run(fmt.Sprintf("existing=%v", exists), func(t *testing.T) {
			cfgPath, stateDir := writeConsoleConfig(t, "")
			body, err := os.ReadFile(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			body = []byte(strings.Replace(string(body), `listen = "127.0.0.1:0"`, `listen = "`+taken.Addr().String()+`"`, 1))
			if err := os.WriteFile(cfgPath, body, 0o600); err != nil {
				t.Fatal(err)
			}
			if exists {
				if err := os.Mkdir(stateDir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			c, err := startConsole(consoleFlags{configPath: cfgPath})
			if err == nil {
				c.close()
				t.Fatal("console started on a taken port")
			}
			if !strings.Contains(err.Error(), taken.Addr().String()) {
				t.Errorf("error %q does not name the taken address", err)
			}
			_, statErr := os.Stat(stateDir)
			switch {
			case !exists && !os.IsNotExist(statErr):
				t.Fatalf("fresh state dir left behind (%v)", statErr)
			case exists && logLine(t, filepath.Join(stateDir, "dispatch-tui.log"), "start", "err") == nil:
				t.Fatal("the existing state dir's log lacks the start error")
			}
		})
	}
}
