package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/ha"
	"dispatch-tui/engine/store"
)

// fencedBatch is a flush touching every kind of state: a record, an
// event, a part and the pause flag.
func fencedBatch(seq uint64) *store.Batch {
	var b store.Batch
	b.Reset()
	b.EndRecord(append(b.BeginRecord(seq), fmt.Sprintf(`{"seq":%d}`, seq)...))
	b.EndEvent(seq, append(b.BeginEvent(), fmt.Sprintf(`{"seq":%d}`, seq)...))
	b.Parts = append(b.Parts, store.PartWrite{Name: "ledger", Keys: []string{fmt.Sprint(seq)}, Values: [][]byte{[]byte("v")}})
	b.Paused = seq%2 == 0
	return &b
}

// contents is what the store holds: record seqs, event seqs, ledger keys,
// the pause flag and the stored outputs' ids.
func contents(t *testing.T, url string) string {
	t.Helper()
	s := open(t, url)
	defer s.Close()
	var recs, evs []uint64
	l, err := s.Load(100, store.RecordFunc(func(body []byte) (uint64, string, error) {
		var seq uint64
		_, err := fmt.Sscanf(string(body), `{"seq":%d}`, &seq)
		recs = append(recs, seq)
		return seq, "", err
	}), func(seq uint64, _ []byte) error { evs = append(evs, seq); return nil })
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := s.LoadPart("ledger", func(k, _ []byte) error { keys = append(keys, string(k)); return nil }); err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, id := range []string{"o1", "o2"} {
		if _, ok, err := s.Output(id); err != nil {
			t.Fatal(err)
		} else if ok {
			outs = append(outs, id)
		}
	}
	return fmt.Sprintf("records %v events %v ledger %v paused %v outputs %v", recs, evs, keys, l.Paused, outs)
}

// TestFencedWritesWriteNothing: with a fence, every write (flush, submit,
// output) goes through while the node leads with the lease's epoch; once
// another node has taken the lease, a write with the old epoch fails with
// store.FencedError naming both epochs and writes nothing; a node whose
// lease ran out on its own clock writes nothing without asking.
func TestFencedWritesWriteNothing(t *testing.T) {
	url := pgtest.NewDatabase(t)
	lease := open(t, url)
	defer lease.Close()
	ctx := context.Background()
	won, ok, err := lease.Acquire(ctx, "a", "x", time.Minute)
	if err != nil || !ok || won.Epoch != 1 {
		t.Fatalf("a's acquire: %+v, %v, %v", won, ok, err)
	}
	var mine atomic.Int64
	var leading atomic.Bool
	mine.Store(1)
	leading.Store(true)
	s, err := Open(Options{URL: url, Timeout: 30 * time.Second, Fence: func() (int64, bool) { return mine.Load(), leading.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Flush(fencedBatch(1)); err != nil {
		t.Fatalf("flush at the lease's epoch: %v", err)
	}
	if err := s.PutOutputs([]string{"o1"}, [][]byte{[]byte("out")}); err != nil {
		t.Fatalf("output at the lease's epoch: %v", err)
	}
	const before = "records [1] events [1] ledger [1] paused false outputs [o1]"
	if got := contents(t, url); got != before {
		t.Fatalf("after the leader's writes: %s; want %s", got, before)
	}

	// b takes over (a released: the test need not wait out the lease).
	if err := lease.Release(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if won, ok, err := lease.Acquire(ctx, "b", "y", time.Minute); err != nil || !ok || won.Epoch != 2 {
		t.Fatalf("b's acquire: %+v, %v, %v", won, ok, err)
	}
	for name, write := range map[string]func() error{
		"flush":  func() error { return s.Flush(fencedBatch(2)) },
		"submit": func() error { return s.Submit(fencedBatch(2)) },
		"output": func() error { return s.PutOutputs([]string{"o2"}, [][]byte{[]byte("out")}) },
	} {
		var fe *store.FencedError
		if err := write(); !errors.As(err, &fe) || fe.Epoch != 1 || fe.Current != 2 || !strings.Contains(err.Error(), "epoch 1 but the lease is at epoch 2") {
			t.Errorf("%s by the deposed epoch 1: %v; want a FencedError naming epochs 1 and 2", name, err)
		}
	}
	// Its own clock says its lease ran out: refused before the store is
	// asked.
	leading.Store(false)
	var fe *store.FencedError
	if err := s.Flush(fencedBatch(2)); !errors.As(err, &fe) || fe.Epoch != 0 || !strings.Contains(err.Error(), "does not hold the leader lease") {
		t.Errorf("flush with no lease on the node's clock: %v; want a FencedError", err)
	}
	if got := contents(t, url); got != before {
		t.Fatalf("after the refused writes: %s; want nothing more than %s", got, before)
	}
	// The new leader's writes go through.
	mine.Store(2)
	leading.Store(true)
	if err := s.Flush(fencedBatch(2)); err != nil {
		t.Fatalf("flush at the new epoch: %v", err)
	}
}

// TestTakeoverWaitsForWrites: a takeover is ordered after a write in
// flight under the old epoch (it waits on the lease row that write
// holds), and neither the renewal nor the release of the writer's own
// lease is held up by it.
func TestTakeoverWaitsForWrites(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s := open(t, url)
	defer s.Close()
	ctx := context.Background()
	if _, ok, err := s.Acquire(ctx, "a", "x", time.Minute); err != nil || !ok {
		t.Fatalf("a's acquire: %v, %v", ok, err)
	}
	w, err := Open(Options{URL: url, Timeout: 30 * time.Second, Fence: func() (int64, bool) { return 1, true }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := w.fence(ctx, tx); err != nil {
		t.Fatalf("the writer's fence at epoch 1: %v", err)
	}
	// Bounded: a renewal that waited for the write would wait forever.
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if ok, err := s.Renew(rctx, 1, time.Minute); err != nil || !ok {
		t.Fatalf("a's renewal while its write is in flight: %v, %v; want it through", ok, err)
	}
	type result struct {
		won ha.Term
		ok  bool
		err error
	}
	got := make(chan result, 1)
	// a's lease ends (released here: expired is the same to b) while its
	// write is still in flight.
	if err := s.Release(ctx, 1); err != nil {
		t.Fatalf("a's release while its write is in flight: %v", err)
	}
	go func() {
		won, ok, err := s.Acquire(ctx, "b", "y", time.Minute)
		got <- result{won, ok, err}
	}()
	// b's acquire is blocked on the row the write holds.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	wait.With{Seen: func() string { return "no backend waiting on a lock" }}.Until(t, "b's acquire to wait for the write", 10*time.Second, func() bool {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%UPDATE leader SET epoch%'`).Scan(&n)
		return err == nil && n == 1
	})
	select {
	case r := <-got:
		t.Fatalf("b's acquire returned (%+v) while a write under epoch 1 was in flight", r)
	default:
	}
	if _, err := tx.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('probe', 'a')`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("the write under epoch 1 could not commit: %v", err)
	}
	r := <-got
	if r.err != nil || !r.ok || r.won.Epoch != 2 {
		t.Fatalf("b's acquire after the write: %+v", r)
	}
	// A write under epoch 1 now is refused.
	var fe *store.FencedError
	if err := w.Flush(fencedBatch(1)); !errors.As(err, &fe) || fe.Current != 2 {
		t.Fatalf("flush under epoch 1 after the takeover: %v", err)
	}
}

// TestStoppedWriterHoldsNoTakeover: a leader stopped in the middle of a
// write (its transaction open, idle, holding the lease row) is ended by
// the server after IdleInTransaction, so the takeover goes through then
// rather than when, if ever, the leader wakes; its write is lost whole.
func TestStoppedWriterHoldsNoTakeover(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s := open(t, url)
	defer s.Close()
	ctx := context.Background()
	if _, ok, err := s.Acquire(ctx, "a", "x", time.Minute); err != nil || !ok {
		t.Fatalf("a's acquire: %v, %v", ok, err)
	}
	w, err := Open(Options{URL: url, Timeout: 30 * time.Second, Fence: func() (int64, bool) { return 1, true }, IdleInTransaction: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := w.fence(ctx, tx); err != nil {
		t.Fatalf("the writer's fence at epoch 1: %v", err)
	}
	if err := s.Release(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The writer stops here. b's acquire waits on its lock at first, but
	// not for longer than the idle timeout, with room for a loaded
	// machine.
	actx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	won, ok, err := s.Acquire(actx, "b", "y", time.Minute)
	if err != nil || !ok || won.Epoch != 2 {
		t.Fatalf("b's acquire while a's write sat idle: %+v, %v, %v; want epoch 2", won, ok, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('probe', 'a')`); err == nil {
		if err = tx.Commit(ctx); err == nil {
			t.Fatal("the stopped writer's transaction committed after the takeover")
		}
	}
}

// TestSlowLoadOutlastsTheIdleTimeout: a leader's start-up load reads
// every record in one read-only transaction and decodes each as it comes;
// the server, done sending, sees the session idle in that transaction
// while the decode goes on (100,000 records on a loaded machine: many
// seconds). The idle timeout that keeps a stopped writer from holding the
// lease row must not end the load: it holds no lock a takeover waits on.
func TestSlowLoadOutlastsTheIdleTimeout(t *testing.T) {
	url := pgtest.NewDatabase(t)
	const idle = 200 * time.Millisecond
	s, err := Open(Options{URL: url, Timeout: 30 * time.Second, IdleInTransaction: idle})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for seq := uint64(1); seq <= 3; seq++ {
		if err := s.Flush(fencedBatch(seq)); err != nil {
			t.Fatal(err)
		}
	}
	var recs []uint64
	_, err = s.Load(100, store.RecordFunc(func(body []byte) (uint64, string, error) {
		var seq uint64
		_, err := fmt.Sscanf(string(body), `{"seq":%d}`, &seq)
		recs = append(recs, seq)
		// A decode slower than the idle timeout, as on a loaded machine.
		time.Sleep(3 * idle)
		return seq, "", err
	}), func(uint64, []byte) error { return nil })
	if err != nil || len(recs) != 3 {
		t.Fatalf("a load slower than the idle timeout: %v, records %v; want all 3 loaded", err, recs)
	}
}
