//go:build linux

package sshhosts

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
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

	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/freeport"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/enginetest/wait"
)

const sshdPath = "/usr/sbin/sshd"

// requireSSHD skips the test when OpenSSH's sshd is not installed, except
// in CI, where it must be.
func requireSSHD(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(sshdPath); err != nil {
		msg := sshdPath + " not found: install Debian's openssh-server to run the real-sshd tests (.ci/run does)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Fatal("sshd is installed but ssh-keygen is not in PATH")
	}
}

// sshdEnv is a set of real sshd processes on 127.0.0.1, each with its own
// host key, all accepting one client key for the current user.
type sshdEnv struct {
	t          *testing.T
	dir        string
	user       string
	clientKey  string // private key file
	knownHosts string
	servers    []*sshdServer
}

type sshdServer struct {
	env     *sshdEnv
	dir     string
	listen  string // IP address sshd listens on
	netns   string // network namespace sshd runs in ("" = the test's own)
	port    int
	addr    string
	hostKey string // private key file in use
	hostPub string // "ssh-ed25519 AAAA..."
	gen     int
	// extraConfig is appended to sshd_config from the next start on.
	extraConfig string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	stderr *enginetest.Buffer
}

// The tests that run an engine or a daemon over these servers call
// t.Parallel: each has servers, ports, directories and network namespaces
// of its own, and most of its time goes to waiting on real processes and
// real intervals, which tests run one after another would add up.

// newSSHDEnv starts n sshd servers and writes a known_hosts file listing
// all of them. Every process is killed in t.Cleanup.
func newSSHDEnv(t *testing.T, n int) *sshdEnv {
	t.Helper()
	return newSSHDEnvAt(t, n, nil)
}

// sshdPlace says where server i listens: in network namespace netns ("" =
// the test's own), on ip, port 2222 (127.0.0.1 and a free port when place is
// nil).
type sshdPlace func(i int) (netns, ip string)

// newSSHDEnvAt is newSSHDEnv with the servers placed by place.
func newSSHDEnvAt(t *testing.T, n int, place sshdPlace) *sshdEnv {
	t.Helper()
	requireSSHD(t)
	dir := t.TempDir()
	// Registered first, so it runs last: nothing the test started may
	// still run then.
	t.Cleanup(func() { checkNoProcesses(t, dir) })
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil && os.Geteuid() == 0 {
		t.Fatalf("mkdir /run/sshd: %v", err)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	env := &sshdEnv{t: t, dir: dir, user: u.Username, clientKey: filepath.Join(dir, "client_key"), knownHosts: filepath.Join(dir, "known_hosts")}
	keygen(t, env.clientKey)
	pub, err := os.ReadFile(env.clientKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		s := &sshdServer{env: env, dir: filepath.Join(dir, fmt.Sprintf("sshd%d", i))}
		if err := os.Mkdir(s.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if place != nil {
			s.netns, s.listen = place(i)
			s.port = 2222
		} else {
			s.listen, s.port = "127.0.0.1", freeport.For(t)
		}
		s.addr = net.JoinHostPort(s.listen, strconv.Itoa(s.port))
		s.newHostKey()
		env.servers = append(env.servers, s)
	}
	t.Cleanup(func() {
		for _, s := range env.servers {
			s.stop()
		}
	})
	for _, s := range env.servers {
		s.start()
	}
	env.writeKnownHosts(env.servers...)
	return env
}

// writeKnownHosts writes the current host key of each server given (only
// those) to the known_hosts file.
func (env *sshdEnv) writeKnownHosts(servers ...*sshdServer) {
	var b strings.Builder
	for _, s := range servers {
		fmt.Fprintf(&b, "[%s]:%d %s\n", s.listen, s.port, s.hostPub)
	}
	if err := os.WriteFile(env.knownHosts, []byte(b.String()), 0o600); err != nil {
		env.t.Fatal(err)
	}
}

func keygen(t *testing.T, file string) {
	t.Helper()
	out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dispatch-tui-test", "-f", file).CombinedOutput()
	if err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
}

// newHostKey generates a new host key for the server (used from the next
// start on).
func (s *sshdServer) newHostKey() {
	t := s.env.t
	s.gen++
	s.hostKey = filepath.Join(s.dir, fmt.Sprintf("host_key%d", s.gen))
	keygen(t, s.hostKey)
	pub, err := os.ReadFile(s.hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(pub))
	if len(f) < 2 {
		t.Fatalf("bad public key %q", pub)
	}
	s.hostPub = f[0] + " " + f[1]
}

// start runs sshd and waits until it accepts connections.
func (s *sshdServer) start() {
	t := s.env.t
	t.Helper()
	cfg := fmt.Sprintf(`Port %d
ListenAddress %s
HostKey %s
AuthorizedKeysFile %s
PidFile %s
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
AllowTcpForwarding no
X11Forwarding no
PrintMotd no
PrintLastLog no
MaxStartups 100
MaxSessions 20
LogLevel INFO
SetEnv HOME=%s
%s`, s.port, s.listen, s.hostKey, filepath.Join(s.env.dir, "authorized_keys"), filepath.Join(s.dir, "sshd.pid"), s.env.home(), s.extraConfig)
	cfgPath := filepath.Join(s.dir, "sshd_config")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr := &enginetest.Buffer{}
	cmd := exec.Command(sshdPath, "-D", "-e", "-f", cfgPath)
	if s.netns != "" {
		// ip execs sshd once it has entered the namespace: cmd's process
		// is sshd itself.
		cmd = exec.Command("ip", "netns", "exec", s.netns, sshdPath, "-D", "-e", "-f", cfgPath)
	}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done, s.stderr = cmd, done, stderr
	s.mu.Unlock()

	deadline := time.Now().Add(wait.Budget(10 * time.Second))
	for {
		select {
		case <-done:
			t.Fatalf("sshd on port %d exited at start:\n%s", s.port, stderr.String())
		default:
		}
		if bannerOK(s.addr) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd on port %d does not accept connections after 10s:\n%s", s.port, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bannerOK reports whether an SSH server answers at addr.
func bannerOK(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "SSH-")
}

// stop kills sshd and every process it started for its connections (they
// run in sessions of their own and would otherwise survive it).
func (s *sshdServer) stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	for _, pid := range descendants(cmd.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	cmd.Process.Kill()
	<-done
}

// restartWithNewKey stops sshd, gives it a new host key and starts it again
// on the same port.
func (s *sshdServer) restartWithNewKey() {
	s.stop()
	s.newHostKey()
	s.start()
}

func (s *sshdServer) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stderr == nil {
		return ""
	}
	return s.stderr.String()
}

// logs returns every server's stderr, for failure messages.
func (env *sshdEnv) logs() string {
	var b strings.Builder
	for i, s := range env.servers {
		fmt.Fprintf(&b, "--- sshd %d (%s):\n%s", i, s.addr, s.log())
	}
	return b.String()
}

// descendants returns the pids of every process below pid.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		children[pp] = append(children[pp], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// processesMentioning returns "pid: cmdline" of every live process whose
// command line contains s.
func processesMentioning(s string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	self := os.Getpid()
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(b) == 0 {
			continue // gone, or a zombie
		}
		cmdline := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
		if strings.Contains(cmdline, s) {
			out = append(out, fmt.Sprintf("%d: %s", p, cmdline))
		}
	}
	return out
}

// checkNoProcesses fails the test if a process mentioning dir (sshd, a
// runner supervisor, ...) is still alive, and kills it.
func checkNoProcesses(t *testing.T, dir string) {
	var left []string
	for deadline := time.Now().Add(wait.Budget(3 * time.Second)); ; {
		left = processesMentioning(dir)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) == 0 {
		return
	}
	t.Errorf("processes left running after the test:\n%s", strings.Join(left, "\n"))
	for _, l := range left {
		if pid, err := strconv.Atoi(strings.SplitN(l, ":", 2)[0]); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// testLogger logs into a buffer that is printed when the test fails (or
// always, with SSHHOSTS_TEST_LOG set).
func testLogger(t *testing.T) *slog.Logger {
	buf := &enginetest.Buffer{}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("SSHHOSTS_TEST_LOG") != "" {
			t.Logf("driver/engine log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// The dispatch-tui binary, built once per test binary.
var (
	buildOnce sync.Once
	buildDir  string
	buildPath string
	buildBin  []byte
	buildHash string
	buildErr  error
)

// dispatchBinary returns the dispatch-tui binary (the one make test built,
// or one built here) and its content and sha256.
func dispatchBinary(t *testing.T) (path string, bin []byte, hash string) {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "sshhosts-test-bin-")
		if buildErr != nil {
			return
		}
		if buildPath, buildErr = enginetest.BuildBinary(buildDir); buildErr != nil {
			return
		}
		buildBin, buildErr = os.ReadFile(buildPath)
		sum := sha256.Sum256(buildBin)
		buildHash = hex.EncodeToString(sum[:])
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath, buildBin, buildHash
}

func TestMain(m *testing.M) {
	code := pgtest.Run(m) // the HA tests' database server, stopped after

	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// home is the HOME of the test hosts' sessions: an empty directory, so that
// the shell sshd runs each command in does not read the test user's own
// startup files (a ~/.bashrc that runs slow tools on every command, under a
// lock, makes every runner call of a busy test slow).
func (env *sshdEnv) home() string {
	h := filepath.Join(env.dir, "home")
	if err := os.MkdirAll(h, 0o755); err != nil {
		env.t.Fatal(err)
	}
	return h
}
