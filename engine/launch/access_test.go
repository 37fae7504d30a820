package launch

// Who may reach the daemon: the socket for its own user, TCP with a
// token (and TLS), roles, timeouts and secrets kept out of every output.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine"
	"dispatch-tui/engine/api"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/freeport"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// run runs the binary with env in dir and returns its exit code and output.
func runBinary(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// cleanEnv is the environment without any DISPATCH_TUI_ or XDG_ setting.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DISPATCH_TUI_") && !strings.HasPrefix(kv, "XDG_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// otherUser creates a throw-away local user for the test, or skips when
// that is not possible (not root, no useradd).
func otherUser(t *testing.T) (uid, gid uint32) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a second user")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("no useradd")
	}
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	name := fmt.Sprintf("dtui%d-%d", os.Getpid()%100000, h.Sum32()%1000)
	if out, err := exec.Command("useradd", "-M", "-N", "-s", "/bin/false", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", name).Run() })
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	u32 := func(s string) uint32 { n, _ := strconv.ParseUint(s, 10, 32); return uint32(n) }
	return u32(u.Uid), u32(u.Gid)
}

// curlAs runs curl as uid:gid against the socket and returns its exit
// code (7: could not connect) and output; with no args it submits a
// container.
func curlAs(t *testing.T, uid, gid uint32, socket string, args ...string) (int, string) {
	t.Helper()
	if len(args) == 0 {
		args = []string{"http://localhost/v1/containers", "-d", `{"command":["id"]}`}
	}
	cmd := exec.Command("curl", append([]string{"-sS", "--max-time", "10", "--unix-socket", socket}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, NoSetGroups: true}}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

func containerCount(t *testing.T, dir string, env []string) int {
	t.Helper()
	code, out, errOut := runBinary(t, dir, env, "ls", "containers", "-o", "json")
	if code != 0 {
		t.Fatalf("ls containers: exit %d: %s", code, errOut)
	}
	var body struct {
		N int `json:"items_available"`
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil {
		t.Fatal(err)
	}
	return body.N
}

// TestDefaultDaemonAnswersOnlyItsUser is the acceptance test of the
// built-in defaults: no TCP listener, a private socket the same user's
// CLI finds with no flags, and nothing for another local user.
func TestDefaultDaemonAnswersOnlyItsUser(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	root := t.TempDir()
	work := filepath.Join(root, "work") // no ./dispatch-tui.toml here
	for _, d := range []string{work, filepath.Join(root, "config")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	env := cleanEnv("XDG_CONFIG_HOME="+filepath.Join(root, "config"), "XDG_STATE_HOME="+filepath.Join(root, "state"))
	stateDir := filepath.Join(root, "state", "dispatch-tui")
	socket := filepath.Join(stateDir, config.SocketName)

	daemon := exec.Command(binary, "--daemon")
	daemon.Dir, daemon.Env = work, env
	var logs enginetest.Buffer
	daemon.Stderr = &logs
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		daemon.Process.Signal(syscall.SIGTERM)
		daemon.Wait()
	})
	wait.Until(t, "the daemon's socket", 20*time.Second, func() bool {
		code, _, _ := runBinary(t, work, env, "ls", "instances")
		return code == 0
	})

	// Private: the state dir 0700, the socket 0600, no TCP listener.
	for path, want := range map[string]os.FileMode{stateDir: 0o700, socket: 0o600} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, mode %v, want %04o", path, err, fi.Mode().Perm(), want)
		}
	}
	if strings.Contains(logs.String(), `"addr"`) {
		t.Errorf("the default daemon listens on TCP:\n%s", logs.String())
	}
	// The plain check of the issue: nothing answers on 9006 (or whatever
	// does is not this daemon: no container appears).
	exec.Command("curl", "-sS", "--max-time", "5", "http://127.0.0.1:9006/v1/containers", "-d", `{"command":["id"]}`).Run()
	if n := containerCount(t, work, env); n != 0 {
		t.Fatalf("%d containers after a TCP submit to the default daemon", n)
	}
	// The same user is an operator, named by uid.
	code, out, errOut := runBinary(t, work, env, "submit", "--priority", "0", "--", "true")
	if code != 0 {
		t.Fatalf("submit as the same user: exit %d: %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	_, evs, _ := runBinary(t, work, env, "ls", "events", "-o", "json")
	if want := fmt.Sprintf(`"actor": "uid:%d`, os.Getuid()); !strings.Contains(evs, want) {
		t.Errorf("events lack %s:\n%s", want, evs)
	}
	runBinary(t, work, env, "kill", id)

	// Another local user: refused by the private state dir, and by the
	// socket's own mode when the directories around it are opened up.
	uid, gid := otherUser(t)
	before := containerCount(t, work, env)
	if code, out := curlAs(t, uid, gid, socket); code == 0 {
		t.Fatalf("another user reached the socket: %s", out)
	}
	for _, d := range []string{root, filepath.Join(root, "state"), stateDir} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("curl", "-sS", "--max-time", "10", "--unix-socket", socket, "http://localhost/healthz").CombinedOutput(); err != nil {
		t.Fatalf("the dispatcher's own user cannot reach the socket: %v %s", err, out)
	}
	if code, out := curlAs(t, uid, gid, socket); code != 7 {
		t.Fatalf("another user on an open path: curl exit %d (%s), want 7 (could not connect)", code, out)
	}
	if n := containerCount(t, work, env); n != before {
		t.Fatalf("another user's submit created a container (%d, was %d)", n, before)
	}
}

// serveTest builds an engine on cfg (the fake driver unless it says otherwise),
// serves its API and returns the log it writes.
func serveTest(t *testing.T, cfg *config.Config, timeouts *Timeouts) (*Running, *enginetest.Buffer) {
	t.Helper()
	var logs enginetest.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := Options{Config: cfg, RunnerBinary: binary, Logger: log, Timeouts: timeouts}
	r, _ := startEngineWith(t, cfg, opts)
	stop, err := Serve(r, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(context.Background()) })
	return r, &logs
}

// logValue returns key of the first log line with msg that has it.
func logValue(logs string, msg, key string) string {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			if v, ok := m[key].(string); ok {
				return v
			}
		}
	}
	return ""
}

func TestTLSRoundTripWithTheCLI(t *testing.T) {
	state := t.TempDir()
	cfg := e2eConfig(state)
	cfg.Cloud.Driver = "fake"
	cfg.Dispatcher.Listen = fmt.Sprintf("127.0.0.1:%d", freeport.For(t))
	cfg.Dispatcher.TLS = "on"
	cfg.Dispatcher.Token = "op-secret"
	cfg.Dispatcher.Tokens = []config.APIToken{{Name: "bob", Role: config.RoleViewer, Token: "bob-secret"}}
	_, logs := serveTest(t, cfg, nil)
	fp := logValue(logs.String(), "api listening", "tls_fingerprint")
	if len(fp) != 64 {
		t.Fatalf("no fingerprint logged:\n%s", logs.String())
	}
	for _, f := range []string{selfSignedCert, selfSignedKey} {
		if fi, err := os.Stat(filepath.Join(state, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", f, err, fi)
		}
	}
	work := t.TempDir()
	env := cleanEnv()
	server := "https://" + cfg.Dispatcher.Listen
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"pinned", []string{"ls", "instances", "--server", server, "--token", "op-secret", "--tls-fingerprint", fp}, 0, ""},
		{"operator verb", []string{"pause", "--server", server, "--token", "op-secret", "--tls-fingerprint", fp}, 0, ""},
		{"wrong pin", []string{"ls", "instances", "--server", server, "--token", "op-secret", "--tls-fingerprint", strings.Repeat("0", 64)}, 1, "does not match the pinned"},
		{"no pin", []string{"ls", "instances", "--server", server, "--token", "op-secret"}, 1, "--tls-fingerprint"},
		{"plain http to TLS", []string{"ls", "instances", "--server", "http://" + cfg.Dispatcher.Listen, "--token", "op-secret"}, 1, ""},
		{"viewer reads", []string{"ls", "containers", "--server", server, "--token", "bob-secret", "--tls-fingerprint", fp}, 0, ""},
		{"viewer verb", []string{"resume", "--server", server, "--token", "bob-secret", "--tls-fingerprint", fp}, 1, "token:bob has the viewer role"},
		{"wrong token", []string{"ls", "types", "--server", server, "--token", "nope", "--tls-fingerprint", fp}, 1, "invalid token"},
		{"plain token off loopback", []string{"ls", "types", "--server", "http://192.0.2.1:9006", "--token", "op-secret"}, 1, "refusing to send a token in clear"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runBinary(t, work, env, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d (%s), want %d with %q", code, errOut, tc.code, tc.want)
			}
		})
	}
	// The certificate survives a restart: the pin stays valid.
	again := filepath.Join(state, selfSignedCert)
	c1, _ := os.ReadFile(again)
	if _, err := loadCertificate("", "", state, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	if c2, _ := os.ReadFile(again); !bytes.Equal(c1, c2) {
		t.Error("the self-signed certificate changed on reload")
	}
}

// TestSlowClientsAreCutOff: 300 clients that send half a body are all
// disconnected once the read timeout passes, though at most
// max_connections of them are served at once.
func TestSlowClientsAreCutOff(t *testing.T) {
	cfg := e2eConfig(t.TempDir())
	cfg.Cloud.Driver = "fake"
	cfg.Dispatcher.Listen = fmt.Sprintf("127.0.0.1:%d", freeport.For(t))
	cfg.Dispatcher.Token = "tok"
	cfg.Dispatcher.MaxConnections = 64
	timeouts := &Timeouts{ReadHeader: 200 * time.Millisecond, Read: 300 * time.Millisecond, Idle: 300 * time.Millisecond}
	r, _ := serveTest(t, cfg, timeouts)

	const n = 300
	start := time.Now()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	half := "POST /v1/containers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n" + `{"command":["id"],` + strings.Repeat(" ", 400)
	for range n {
		c, err := net.Dial("tcp", cfg.Dispatcher.Listen)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, half); err != nil {
			t.Fatal(err)
		}
	}
	// Every connection ends (the server answers and closes, or resets)
	// well before this deadline: 300/64 rounds of a 300 ms timeout.
	deadline := start.Add(15 * time.Second)
	var wg sync.WaitGroup
	open := make(chan int, n)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(deadline)
			_, err := io.Copy(io.Discard, c)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				open <- i
			}
		}()
	}
	wg.Wait()
	close(open)
	if len(open) > 0 {
		t.Fatalf("%d of %d half-body connections still open after %s", len(open), n, time.Since(start).Round(time.Millisecond))
	}
	t.Logf("%d half-body connections closed in %s", n, time.Since(start).Round(time.Millisecond))
	if cs, _ := r.Containers(engine.ListOptions{}); len(cs) != 0 {
		t.Fatalf("half a body created %d containers", len(cs))
	}
}

// TestSecretsStayOut runs a container on the local driver, then looks for
// the instance secrets and the API token in the log, the events, every
// API answer and every process's command line; and checks that the state
// dir keeps its files to the dispatcher's user.
func TestSecretsStayOut(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	cfg := e2eConfig(state)
	cfg.Dispatcher.Listen = fmt.Sprintf("127.0.0.1:%d", freeport.For(t))
	cfg.Dispatcher.Token = "token-that-must-not-leak"
	r, logs := serveTest(t, cfg, nil)

	c, err := api.Dial("unix:"+cfg.Dispatcher.SocketPath(), api.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sub, err := c.Submit(ctx, queue.Spec{Command: []string{"sh", "-c", "echo hello; env"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "container Complete", time.Minute, func() bool {
		got, err := c.Container(ctx, sub.ID)
		return err == nil && got.State == queue.Complete
	})
	insts, err := r.Driver.Instances(ctx, nil)
	if err != nil || len(insts) == 0 {
		t.Fatalf("instances: %v, %d", err, len(insts))
	}
	secrets := []string{cfg.Dispatcher.Token}
	for _, i := range insts {
		if s := i.Tags()[cloud.TagSecret]; s != "" {
			secrets = append(secrets, s)
		}
	}
	if len(secrets) < 2 {
		t.Fatal("no instance secret to look for")
	}

	outputs := map[string]string{"log": logs.String()}
	get := func(path string) bool {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://x"+path, nil)
		resp, err := c.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		outputs["GET "+path] = string(b)
		return resp.StatusCode == 200
	}
	// The output is stored just after the container completes.
	wait.Until(t, "stored output", 30*time.Second, func() bool { return get("/v1/containers/" + sub.ID + "/logs") })
	for _, p := range []string{"/v1/instances", "/v1/containers", "/v1/containers/" + sub.ID, "/v1/containers/" + sub.ID + "/logs",
		"/v1/types", "/v1/events?limit=10000", "/v1/summary", "/v1/whoami", "/metrics"} {
		if !get(p) {
			t.Fatalf("GET %s: %s", p, outputs["GET "+p])
		}
	}
	if !strings.Contains(outputs["GET /v1/containers/"+sub.ID+"/logs"], "hello") {
		t.Fatalf("the container's output is missing: %q", outputs["GET /v1/containers/"+sub.ID+"/logs"])
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil {
			outputs["ps "+p] = string(b)
		}
	}
	for what, out := range outputs {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s holds a secret (%.6s…)", what, s)
			}
		}
	}

	// Nothing in the state dir is open to group or others.
	filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			return nil
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 && !executableWithoutSecrets(path) {
			t.Errorf("%s: mode %04o is open to group or others", path, perm)
		}
		return nil
	})
}

// executableWithoutSecrets tells the deployed runner binary (0755 on an
// instance, as on a real host) from files that need to stay private.
func executableWithoutSecrets(path string) bool {
	return strings.Contains(filepath.Base(path), "dispatch-tui-runner")
}

// TestSocketGroupAdmitsItsMembers: with socket_group, the group's members
// reach the socket (as operators, named by uid) and others still do not.
func TestSocketGroupAdmitsItsMembers(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	uid, gid := otherUser(t)
	g, err := user.LookupGroupId(strconv.Itoa(int(gid)))
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	// Let the other user walk down to the state dir; the dispatcher
	// decides the rest.
	for d := filepath.Dir(state); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	cfg := e2eConfig(state)
	cfg.Cloud.Driver = "fake"
	cfg.Dispatcher.SocketGroup = g.Name
	serveTest(t, cfg, nil)
	socket := cfg.Dispatcher.SocketPath()
	for path, want := range map[string]os.FileMode{state: 0o710, socket: 0o660} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != want || st.Gid != gid {
			t.Errorf("%s: mode %04o group %d, want %04o group %d", path, fi.Mode().Perm(), st.Gid, want, gid)
		}
	}
	code, out := curlAs(t, uid, gid, socket, "http://localhost/v1/whoami")
	if want := fmt.Sprintf(`"actor":"uid:%d(`, uid); code != 0 || !strings.Contains(out, want) || !strings.Contains(out, `"role":"operator"`) {
		t.Fatalf("a member of %s: curl exit %d: %s, want %s… as operator", g.Name, code, out, want)
	}
	// The same user outside the group: refused.
	if code, out := curlAs(t, uid, 65534, socket, "http://localhost/v1/whoami"); code != 7 {
		t.Fatalf("outside the group: curl exit %d: %s, want 7", code, out)
	}
}

// TestFollowOutlivesTheReadTimeout: the whole-request timeout bounds how
// long a client takes to send its request, not how long a logs --follow
// stream may last.
func TestFollowOutlivesTheReadTimeout(t *testing.T) {
	t.Parallel()
	cfg := e2eConfig(t.TempDir())
	cfg.Cloud.Driver = "fake"
	timeouts := &Timeouts{ReadHeader: 100 * time.Millisecond, Read: 200 * time.Millisecond, Idle: 200 * time.Millisecond}
	r, _ := serveTest(t, cfg, timeouts)
	c, err := api.Dial("unix:"+cfg.Dispatcher.SocketPath(), api.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sub, err := c.Submit(ctx, queue.Spec{Command: []string{"some-daemon"}, RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "container running", 30*time.Second, func() bool {
		got, _ := r.Container(sub.ID)
		return got.State == queue.Running
	})
	done := make(chan error, 1)
	go func() { done <- c.Logs(ctx, sub.ID, 0, true, io.Discard) }()
	select {
	case err := <-done:
		t.Fatalf("follow ended after less than 5 read timeouts: %v", err)
	case <-time.After(5 * timeouts.Read):
	}
	if _, err := c.ContainerVerb(ctx, sub.ID, view.ContainerKill, ""); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("follow: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("follow did not end after the kill")
	}
}
