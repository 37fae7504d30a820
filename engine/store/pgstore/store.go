// Package pgstore keeps the queue in PostgreSQL (pgx, plain SQL): the same
// records, events, output and pause flag as the embedded store, one
// transaction per flush (docs/design.md §3, Persistence). It implements
// store.Store.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"dispatch-tui/engine/store"
)

// Options configure a Store.
type Options struct {
	URL string // postgres://…
	// EventRetention is how many of the newest events the store keeps
	// (0 = all).
	EventRetention int
	// Timeout bounds each of the store's calls to the server (0: a
	// minute).
	Timeout time.Duration
	// Fence, when set, gives the epoch this node leads with, and false
	// when it must not write (engine/ha's Elector.Token): every write
	// transaction first checks that epoch against the lease (fence.go).
	// nil: a single dispatcher, nothing checked.
	Fence func() (epoch int64, ok bool)
	// IdleInTransaction, when set, ends a session the server sees idle
	// inside a transaction for longer (idle_in_transaction_session_timeout):
	// a leader stopped mid-write (SIGSTOP, a frozen VM) would otherwise
	// hold its lock on the lease row, and with it every takeover, until it
	// woke. 0: the server's setting.
	IdleInTransaction time.Duration
}

// Store is the PostgreSQL store.
type Store struct {
	pool *pgxpool.Pool
	opts Options
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at opts.URL and brings its schema up to
// date. A server it cannot reach, refused credentials or a schema newer
// than this binary are errors that say what to do; nothing is written
// then.
func Open(opts Options) (*Store, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	pool, err := connect(ctx, opts.URL, opts.IdleInTransaction)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return &Store{pool: pool, opts: opts}, nil
}

// ctx is a context for one call to the server.
func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.opts.Timeout)
}

// Load reads every record, the newest recentEvents events and the pause
// flag, in one read-only transaction (one snapshot).
func (s *Store) Load(recentEvents int, recs store.Records, ev func(seq uint64, body []byte) error) (store.Loaded, error) {
	out := store.Loaded{NextEvent: 1}
	// Bounded like every call: a server that takes the connection but
	// never answers must not hold the start-up forever.
	ctx, cancel := s.ctx()
	defer cancel()
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		// The rows are decoded as they come, and the server, done sending,
		// sees the session idle in this transaction meanwhile: the idle
		// timeout (Options.IdleInTransaction) is for writers, whose locks a
		// takeover waits on; a read holds none, so it is off here.
		if _, err := tx.Exec(ctx, `SET LOCAL idle_in_transaction_session_timeout = 0`); err != nil {
			return err
		}
		if err := loadRecords(ctx, tx, recs); err != nil {
			return err
		}
		var seq int64
		var body []byte
		rows, err := tx.Query(ctx, `SELECT seq, body FROM (SELECT seq, body FROM events ORDER BY seq DESC LIMIT $1) e ORDER BY seq`, recentEvents)
		if err != nil {
			return err
		}
		_, err = pgx.ForEachRow(rows, []any{&seq, &body}, func() error {
			if err := ev(uint64(seq), body); err != nil {
				return fmt.Errorf("load events: %w", err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		var next *int64
		if err := tx.QueryRow(ctx, `SELECT max(seq) + 1 FROM events`).Scan(&next); err != nil {
			return err
		}
		if next != nil {
			out.NextEvent = uint64(*next)
		}
		var paused string
		err = tx.QueryRow(ctx, `SELECT value FROM meta WHERE key = 'paused'`).Scan(&paused)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		out.Paused = paused == "true"
		return nil
	})
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return out, fmt.Errorf("load from PostgreSQL: no answer within %s: check that the server is up and not overloaded, and the network to it: %w", s.opts.Timeout, err)
	}
	if err != nil {
		return out, fmt.Errorf("load from PostgreSQL: %w", err)
	}
	return out, nil
}

// Due: PostgreSQL needs no upkeep of the store's own at a flush.
func (s *Store) Due(int, bool) bool { return false }

// Flush writes b in one transaction.
func (s *Store) Flush(b *store.Batch) error {
	ctx, cancel := s.ctx()
	defer cancel()
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.fence(ctx, tx); err != nil {
			return err
		}
		if err := s.writeBatch(ctx, tx, b); err != nil {
			return err
		}
		v := "false"
		if b.Paused {
			v = "true"
		}
		// Written only when it differs: no row rewritten per pass.
		_, err := tx.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('paused', $1)
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value WHERE meta.value <> EXCLUDED.value`, v)
		return err
	})
}

// Submit writes b's new records and events in one transaction.
func (s *Store) Submit(b *store.Batch) error {
	ctx, cancel := s.ctx()
	defer cancel()
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.fence(ctx, tx); err != nil {
			return err
		}
		return s.writeBatch(ctx, tx, b)
	})
}

// writeBatch writes b's records, events and parts in tx: what a flush, a
// submit and a copy write alike.
func (s *Store) writeBatch(ctx context.Context, tx pgx.Tx, b *store.Batch) error {
	if err := writeRecords(ctx, tx, b); err != nil {
		return err
	}
	if err := s.writeEvents(ctx, tx, b); err != nil {
		return err
	}
	return writeParts(ctx, tx, b.Parts)
}

// writeRecords upserts b's records and deletes its drops with their
// output: each Seq once, as its last entry in b says.
func writeRecords(ctx context.Context, tx pgx.Tx, b *store.Batch) error {
	last := map[uint64][]byte{}
	var order []uint64
	err := b.EachRecord(func(seq uint64, body []byte) error {
		if _, ok := last[seq]; !ok {
			order = append(order, seq)
		}
		last[seq] = body
		return nil
	})
	if err != nil {
		return err
	}
	var putSeqs, delSeqs []int64
	var bodies [][]byte
	for _, seq := range order {
		if body := last[seq]; body != nil {
			putSeqs, bodies = append(putSeqs, int64(seq)), append(bodies, body)
		} else {
			delSeqs = append(delSeqs, int64(seq))
		}
	}
	if len(putSeqs) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO containers (seq, body) SELECT * FROM unnest($1::bigint[], $2::bytea[])
			ON CONFLICT (seq) DO UPDATE SET body = EXCLUDED.body`, putSeqs, bodies); err != nil {
			return fmt.Errorf("write containers: %w", err)
		}
	}
	if len(delSeqs) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM containers WHERE seq = ANY($1)`, delSeqs); err != nil {
			return fmt.Errorf("drop containers: %w", err)
		}
	}
	if drops := b.Drops(); len(drops) > 0 {
		ids := make([]string, len(drops))
		for i, d := range drops {
			ids[i] = d.ID
		}
		if _, err := tx.Exec(ctx, `DELETE FROM outputs WHERE id = ANY($1)`, ids); err != nil {
			return fmt.Errorf("drop output: %w", err)
		}
	}
	return nil
}

// writeEvents inserts b's events and applies the retention, deleting at
// most store.MaxDeletesPerFlush.
func (s *Store) writeEvents(ctx context.Context, tx pgx.Tx, b *store.Batch) error {
	n := b.Events()
	if n == 0 {
		return nil
	}
	seqs := make([]int64, 0, n)
	bodies := make([][]byte, 0, n)
	for i := 0; i < n; {
		first, _, k, lines := b.EventRun(i, n)
		for j := range k {
			end := indexNewline(lines)
			seqs, bodies = append(seqs, int64(first)+int64(j)), append(bodies, lines[:end])
			lines = lines[end+1:]
		}
		i += k
	}
	// A retried write may find its events already there: a commit the
	// server made whose answer was lost (a restart at that moment).
	if _, err := tx.Exec(ctx, `INSERT INTO events (seq, body) SELECT * FROM unnest($1::bigint[], $2::bytea[])
		ON CONFLICT (seq) DO NOTHING`, seqs, bodies); err != nil {
		return fmt.Errorf("write events: %w", err)
	}
	if keep := s.opts.EventRetention; keep > 0 && seqs[n-1] > int64(keep) {
		if _, err := tx.Exec(ctx, `DELETE FROM events WHERE seq IN
			(SELECT seq FROM events WHERE seq <= $1 ORDER BY seq LIMIT $2)`, seqs[n-1]-int64(keep), store.MaxDeletesPerFlush); err != nil {
			return fmt.Errorf("prune events: %w", err)
		}
	}
	return nil
}

// indexNewline is the index of the first newline in b (an event line's
// end: the JSON itself has none).
func indexNewline(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return len(b)
}

const putOutputs = `INSERT INTO outputs (id, body) SELECT * FROM unnest($1::text[], $2::bytea[])
	ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body`

// PutOutputs stores outputs in one transaction.
func (s *Store) PutOutputs(ids []string, outputs [][]byte) error {
	ctx, cancel := s.ctx()
	defer cancel()
	outputs = emptyNotNull(outputs)
	if s.opts.Fence == nil {
		_, err := s.pool.Exec(ctx, putOutputs, ids, outputs)
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.fence(ctx, tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, putOutputs, ids, outputs)
		return err
	})
}

// Output returns a container's stored output.
func (s *Store) Output(id string) ([]byte, bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var out []byte
	err := s.pool.QueryRow(ctx, `SELECT body FROM outputs WHERE id = $1`, id).Scan(&out)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if out == nil && err == nil {
		out = []byte{}
	}
	return out, err == nil, err
}

var _ store.OutputLister = (*Store)(nil)

// AllOutputs reads every stored output in one query (store copy's
// read-back), not a round trip per container.
func (s *Store) AllOutputs(fn func(id string, body []byte) error) error {
	ctx, cancel := s.ctx()
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT id, body FROM outputs`)
	if err != nil {
		return err
	}
	var id string
	var body []byte
	_, err = pgx.ForEachRow(rows, []any{&id, &body}, func() error {
		if body == nil {
			body = []byte{}
		}
		return fn(id, body)
	})
	return err
}

// eventPage is how many events Events fetches a query.
const eventPage = 1000

// Events calls fn with the events of Seq > since, oldest first, a page
// at a time.
func (s *Store) Events(since uint64, fn func(seq uint64, body []byte) (bool, error)) error {
	ctx, cancel := s.ctx()
	defer cancel()
	for {
		rows, err := s.pool.Query(ctx, `SELECT seq, body FROM events WHERE seq > $1 ORDER BY seq LIMIT $2`, int64(since), eventPage)
		if err != nil {
			return err
		}
		n, more := 0, true
		var seq int64
		var body []byte
		_, err = pgx.ForEachRow(rows, []any{&seq, &body}, func() error {
			n++
			since = uint64(seq)
			if !more {
				return nil
			}
			var err error
			more, err = fn(uint64(seq), body)
			return err
		})
		if err != nil || !more || n < eventPage {
			return err
		}
	}
}

// FirstEvent returns the oldest stored event's Seq.
func (s *Store) FirstEvent() (uint64, bool) {
	ctx, cancel := s.ctx()
	defer cancel()
	var first *int64
	if err := s.pool.QueryRow(ctx, `SELECT min(seq) FROM events`).Scan(&first); err != nil || first == nil {
		return 0, false
	}
	return uint64(*first), true
}

// Close closes the connections.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// emptyNotNull returns a copy of outputs with each nil one (a container
// that printed nothing) made empty: pgx sends a nil slice as NULL, which
// the body column refuses, and the whole batch's write failed with it.
func emptyNotNull(outputs [][]byte) [][]byte {
	out := slices.Clone(outputs)
	for i := range out {
		if out[i] == nil {
			out[i] = []byte{}
		}
	}
	return out
}
