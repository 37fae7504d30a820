package pgtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
