package pgstore

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/queue"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

func open(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(Options{URL: url, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMigrations: a new database gets every migration once, recorded;
// dispatchers starting together take turns (the advisory lock); a second
// start applies nothing; the dry run lists what is missing.
func TestMigrations(t *testing.T) {
	url := pgtest.NewDatabase(t)
	plan, err := Plan(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	all, err := migrations()
	if err != nil || len(plan) != len(all) || len(all) == 0 {
		t.Fatalf("plan of a new database: %d migrations (err %v), want all %d", len(plan), err, len(all))
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := Open(Options{URL: url, Timeout: time.Minute})
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent starts: %v", err)
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n, max int
	if err := conn.QueryRow(context.Background(), `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n != len(all) || max != len(all) {
		t.Fatalf("schema_migrations: %d rows, max %d; want %d applied once each", n, max, len(all))
	}
	if plan, err := Plan(context.Background(), url); err != nil || len(plan) != 0 {
		t.Fatalf("plan after the migration: %v, %v; want none", plan, err)
	}
}

// TestSchemaNewerRefused: a database a newer binary migrated is refused
// with what to do, and nothing is written to it.
func TestSchemaNewerRefused(t *testing.T) {
	url := pgtest.NewDatabase(t)
	open(t, url).Close()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func() int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	had := count() + 1 // with the future one
	if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES (999, 'future')`); err != nil {
		t.Fatal(err)
	}
	_, err = Open(Options{URL: url})
	var se *SchemaError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "newer than this dispatch-tui knows") {
		t.Fatalf("Open of a newer schema: %v", err)
	}
	if n := count(); n != had {
		t.Fatalf("schema_migrations holds %d rows after the refusal, want the %d it had", n, had)
	}
}

// TestConnectErrors: a server that does not answer and a database that
// does not exist are said plainly, without the password.
func TestConnectErrors(t *testing.T) {
	url := pgtest.NewDatabase(t)
	for _, tc := range []struct{ name, url, want string }{
		{"nobody listening", "postgres://u:sekrit@127.0.0.1:1/db?connect_timeout=5", "cannot reach PostgreSQL at 127.0.0.1:1"},
		{"no such database", url[:strings.LastIndex(url, "/")] + "/nosuchdb?sslmode=disable", "the database does not exist"},
		{"not a URL", "mysql://x/y", "want a URL starting postgres://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(Options{URL: tc.url, Timeout: 20 * time.Second})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v; want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "sekrit") {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
}

// TestServerRestartMidRun: PostgreSQL restarted (immediate: a crash) under
// a running queue. Writes fail while it is down, the queue says the store
// is unavailable since then and keeps the changes in memory; once the
// server is back, the next flush writes them and the store is available
// again, and a reopen finds everything.
func TestServerRestartMidRun(t *testing.T) {
	url := pgtest.NewDatabase(t)
	srv := pgtest.Start(t)
	clk := clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	q, err := queue.Open(queue.Options{Store: open(t, url), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { q.Close() }()
	cs, err := q.SubmitBatch([]queue.Spec{{Command: []string{"true"}}, {Command: []string{"true"}}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	// Verbs keep coming while the server restarts: those whose flush
	// finds it down stay in memory.
	restarted := make(chan error, 1)
	go func() { restarted <- srv.Restart("immediate") }()
	sawDown, prio := false, 0
	for waiting := true; waiting; {
		select {
		case err := <-restarted:
			if err != nil {
				t.Fatalf("restart: %v\n%s", err, srv.Log())
			}
			waiting = false
		default:
		}
		prio = 1 + prio%9
		// Applied in memory even when its flush fails (the verb says so).
		q.SetPriority(cs[0].ID, prio, "operator:alice", "")
		if !q.StoreHealth().UnavailableSince.IsZero() {
			sawDown = true
		}
		time.Sleep(20 * time.Millisecond) // the pace of the verbs, not a wait for state
	}
	if !sawDown {
		t.Fatal("no write failed while the server restarted: the test saw no outage")
	}
	// Back: the next flush writes what was kept.
	deadline := time.Now().Add(time.Minute)
	for {
		err := q.Flush()
		if err == nil && q.StoreHealth().UnavailableSince.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store did not come back within a minute: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	q.Close()
	q, err = queue.Open(queue.Options{Store: open(t, url), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	c, ok := q.Get(cs[0].ID)
	if !ok || c.Priority != prio {
		t.Fatalf("after the restart and a reopen: %+v, %v; want priority %d", c, ok, prio)
	}
	evs, err := q.Events(0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		if e.Kind == queue.StoreEventKind {
			kinds = append(kinds, e.Action)
		}
	}
	if len(kinds) != 2 || kinds[0] != queue.StoreEventUnavailable || kinds[1] != queue.StoreEventAvailable {
		t.Fatalf("store events %v; want unavailable then available", kinds)
	}
}
