// Package pgtest runs a real PostgreSQL server (Debian's postgresql
// package) for tests: initdb into a temporary directory as an unprivileged
// user (the server refuses to run as root), listening on a socket in that
// directory and on a free loopback port; one server per test binary, a
// database per test. Under CI=true a missing server fails the test.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/freeport"

	"github.com/jackc/pgx/v5"
)

// Server is one running PostgreSQL server.
type Server struct {
	bin     string // the directory of initdb, pg_ctl and postgres
	root    string // everything of the server's: data, socket dir, log
	data    string
	sockDir string
	logPath string
	port    int
	cred    *syscall.Credential // nil when the test runs unprivileged
}

var (
	shared     *Server
	sharedErr  error
	sharedOnce sync.Once
	dbSeq      atomic.Int64
)

// Run is TestMain's body for a package that uses Start: it runs the tests,
// then stops the shared server (if one was started) and removes its files.
func Run(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	return code
}

// Start returns the test binary's server, starting it on first use. It
// skips the test when PostgreSQL is not installed, or fails it under
// CI=true. The package's TestMain must call Run, which stops it.
func Start(t testing.TB) *Server {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = start() })
	if sharedErr != nil {
		if errors.Is(sharedErr, errNotInstalled) && os.Getenv("CI") != "true" {
			t.Skip(sharedErr.Error())
		}
		t.Fatal(sharedErr)
	}
	return shared
}

// NewDatabase creates an empty database on the test binary's server for t,
// dropped at t's cleanup, and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return Start(t).NewDatabase(t)
}

// NewDatabase creates an empty database on s for t, dropped at t's
// cleanup, and returns its URL.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("pgtest: drop database %s: %v", name, err)
		}
	})
	return s.URL(name)
}

// URL is a connection string for database db over TCP on loopback.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// SocketURL is a connection string for database db over the server's Unix
// socket.
func (s *Server) SocketURL(db string) string {
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%d", db, s.sockDir, s.port)
}

// Port is the server's loopback TCP port.
func (s *Server) Port() int { return s.port }

// Restart restarts the server with pg_ctl's shutdown mode ("immediate" is a
// crash: no checkpoint, recovery at start; "fast" a clean stop).
func (s *Server) Restart(mode string) error {
	return s.pgCtl("restart", "-m", mode, "-o", s.options())
}

// Stop stops the server at once and removes its files.
func (s *Server) Stop() error {
	err := s.pgCtl("stop", "-m", "immediate")
	if rmErr := os.RemoveAll(s.root); rmErr != nil && err == nil {
		err = rmErr
	}
	return err
}

// Log returns the server's log so far, for a failing test's message.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

var errNotInstalled = errors.New("pgtest: PostgreSQL's initdb is not installed (apt-get install postgresql)")

func start() (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{bin: bin, root: root, data: filepath.Join(root, "data"), sockDir: filepath.Join(root, "sock"), logPath: filepath.Join(root, "server.log")}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(root)
		}
	}()
	if os.Geteuid() == 0 {
		// The server refuses root: run it as nobody, in directories it owns.
		if s.cred, err = unprivileged(); err != nil {
			return nil, err
		}
		if err := os.Chmod(root, 0o755); err != nil {
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	for _, d := range []string{s.data, s.sockDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	if err := s.own(s.data, s.sockDir); err != nil {
		return nil, err
	}
	if f, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY, 0o600); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	} else {
		f.Close()
	}
	if err := s.own(s.logPath); err != nil {
		return nil, err
	}
	if out, err := s.command(filepath.Join(bin, "initdb"), "-D", s.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	// A free port can be taken between our probe and the server's bind:
	// try a few.
	for attempt := 0; ; attempt++ {
		if s.port, err = freeport.Pick(); err != nil {
			return nil, fmt.Errorf("pgtest: %w", err)
		}
		if err = s.pgCtl("start", "-o", s.options()); err == nil {
			break
		}
		if attempt == 4 {
			return nil, fmt.Errorf("%w\n%s", err, s.Log())
		}
	}
	if err := s.startReaper(); err != nil {
		s.pgCtl("stop", "-m", "immediate")
		return nil, err
	}
	ok = true
	return s, nil
}

// reaperScript waits for the test binary ($0) to end, then stops the
// server whose data directory is $1 (SIGQUIT: an immediate shutdown) and
// removes $2, its files. Run's cleanup does this when the tests end
// normally; a test binary killed by its -timeout, or by a signal, never
// gets there, and its server would outlive it.
const reaperScript = `while [ -d /proc/$0 ]; do sleep 1; done
pid=$(head -n 1 "$1/postmaster.pid" 2>/dev/null) && kill -QUIT "$pid" 2>/dev/null
i=0
while [ -n "$pid" ] && [ -d "/proc/$pid" ] && [ $i -lt 120 ]; do sleep 0.5; i=$((i+1)); done
rm -rf "$2"`

// startReaper starts reaperScript for s in its own session, so that it
// outlives the test binary (and is not in a process group a test kills).
func (s *Server) startReaper() error {
	c := exec.Command("/bin/sh", "-c", reaperScript, strconv.Itoa(os.Getpid()), s.data, s.root)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return fmt.Errorf("pgtest: start the server's reaper: %w", err)
	}
	go c.Wait() // ends when the test binary does, or sooner: reaps it while we live
	return nil
}

// options are the server's settings: our socket dir and port, loopback
// only, and fsync=off. A commit still writes its WAL to the kernel before
// it returns (synchronous_commit stays on), so what a test committed
// survives the server's crash (Restart("immediate"), a killed backend);
// only the machine's crash would lose it, and no test crashes the
// machine. The fsyncs made the PostgreSQL tests several times slower
// than the same tests on the embedded store on a busy disk.
func (s *Server) options() string {
	return fmt.Sprintf("-k %s -p %d -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=32MB -c fsync=off", s.sockDir, s.port)
}

func (s *Server) pgCtl(args ...string) error {
	full := append([]string{"-D", s.data, "-l", s.logPath, "-w", "-t", "120"}, args...)
	if out, err := s.command(filepath.Join(s.bin, "pg_ctl"), full...).CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: pg_ctl %s: %v\n%s", args[0], err, out)
	}
	return nil
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Dir = s.root
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C", "HOME=" + s.root}
	if s.cred != nil {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return c
}

// own hands paths to the server's user.
func (s *Server) own(paths ...string) error {
	if s.cred == nil {
		return nil
	}
	for _, p := range paths {
		if err := os.Chown(p, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	return nil
}

func (s *Server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// findBin finds the directory of initdb: on PATH, else the newest of
// Debian's /usr/lib/postgresql/N/bin.
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real), nil
		}
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(dirs) == 0 {
		return "", errNotInstalled
	}
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	return filepath.Dir(dirs[0]), nil
}

// version is N of /usr/lib/postgresql/N/bin/initdb.
func version(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

func unprivileged() (*syscall.Credential, error) {
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root needs the user nobody to run the server: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// PasswordUser is the role PasswordURL connects as: the only one the
// server asks a password of (scram-sha-256 over TCP); the others stay
// trusted.
const PasswordUser = "pgtest_pw"

var passwordOnce sync.Once

// PasswordURL returns a URL for database db as PasswordUser, giving
// password (the role's is "right-password"), creating the role and its
// pg_hba.conf line on first use.
func (s *Server) PasswordURL(t testing.TB, db, password string) string {
	t.Helper()
	var err error
	passwordOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err = s.exec(ctx, `CREATE ROLE `+PasswordUser+` LOGIN SUPERUSER PASSWORD 'right-password'`); err != nil {
			return
		}
		hba := filepath.Join(s.data, "pg_hba.conf")
		var old []byte
		if old, err = os.ReadFile(hba); err != nil {
			return
		}
		// The first matching line wins: this one before the trusting ones.
		line := "host all " + PasswordUser + " 127.0.0.1/32 scram-sha-256\n"
		if err = os.WriteFile(hba, append([]byte(line), old...), 0o600); err != nil {
			return
		}
		err = s.pgCtl("reload")
	})
	if err != nil {
		t.Fatalf("pgtest: a password role: %v", err)
	}
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", PasswordUser, password, s.port, db)
}
