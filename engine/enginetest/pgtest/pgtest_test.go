package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"dispatch-tui/engine/enginetest/wait"
)

func TestMain(m *testing.M) { os.Exit(Run(m)) }

// TestServer: two tests' databases are apart; a committed row survives an
// immediate (crash) restart; both URLs reach the server.
func TestServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, b := NewDatabase(t), NewDatabase(t)
	if a == b {
		t.Fatalf("two databases share the URL %s", a)
	}
	connA, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connA.Exec(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('committed')"); err != nil {
		t.Fatal(err)
	}
	connA.Close(ctx)
	connB, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := connB.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'kept'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the other test's database sees table kept: n=%d err=%v", n, err)
	}
	connB.Close(ctx)

	s := Start(t)
	if err := s.Restart("immediate"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatalf("after the restart: %v\n%s", err, s.Log())
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != "committed" {
		t.Fatalf("after an immediate restart: v=%q err=%v", v, err)
	}
	sock, err := pgx.Connect(ctx, s.SocketURL("postgres"))
	if err != nil {
		t.Fatalf("socket URL: %v", err)
	}
	sock.Close(ctx)
}

// A test binary that dies without its TestMain's cleanup (killed, as a
// -timeout's panic or a signal ends it) does not leave its server running
// or its files behind.
func TestServerEndsWithItsTestBinary(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		s := Start(t)
		fmt.Printf("server %d %s\n", s.Port(), s.root)
		time.Sleep(2 * time.Minute) // killed by the parent long before
		return
	}
	Start(t) // skips (or fails under CI) here when PostgreSQL is missing
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerEndsWithItsTestBinary$", "-test.v")
	cmd.Env = append(os.Environ(), "PGTEST_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var port int
	var root string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "server %d %s", &port, &root); err == nil {
			break
		}
	}
	if root == "" {
		t.Fatalf("the child test binary never said its server's port (%v)", sc.Err())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	wait.With{Seen: func() string {
		_, statErr := os.Stat(root)
		return fmt.Sprintf("port %d, files %s: %v", port, root, statErr)
	}}.Until(t, "the killed binary's server gone with its files", time.Minute, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return false
		}
		_, err = os.Stat(root)
		return errors.Is(err, fs.ErrNotExist)
	})
}
