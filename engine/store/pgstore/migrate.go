// Schema migrations: versioned SQL files embedded in the binary, applied
// at start under an advisory lock, each in its own transaction.

package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one schema step: migrations/NNNN_name.sql.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]Migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: want NNNN_name.sql", n)
		}
		body, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %d (%s): versions must run 1, 2, … without gaps", m.Version, m.Name)
		}
	}
	return out, nil
}

// migrationLock is the advisory lock's key: two dispatchers starting on
// one database apply the migrations one after the other, not together.
const migrationLock = 0x6469737061746368 // "dispatch"

// versionTable records which migrations the database has.
const versionTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`

// Pending returns the migrations the database at pool lacks, and refuses a
// database whose schema is newer than this binary knows.
func pending(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) ([]Migration, error) {
	all, err := migrations()
	if err != nil {
		return nil, err
	}
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, fmt.Errorf("read the schema version: %w", err)
	}
	have := 0
	if exists {
		if err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
			return nil, fmt.Errorf("read the schema version: %w", err)
		}
	}
	if have > len(all) {
		return nil, &SchemaError{Have: have, Know: len(all)}
	}
	return all[have:], nil
}

// SchemaError is a database whose schema is newer than this binary.
type SchemaError struct{ Have, Know int }

func (e *SchemaError) Error() string {
	return fmt.Sprintf("the database's schema is version %d, newer than this dispatch-tui knows (%d): run the newer dispatch-tui that upgraded it, or point [store] url at another database", e.Have, e.Know)
}

// Plan returns what migrate would apply to the database at url, applying
// nothing (store migrate --dry-run).
func Plan(ctx context.Context, url string) ([]Migration, error) {
	pool, err := connect(ctx, url, 0)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	return pending(ctx, pool)
}

// migrate applies the pending migrations, each in its own transaction,
// holding the advisory lock so that concurrent starts take turns.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("migrate: take the lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	todo, err := pending(ctx, conn)
	if err != nil {
		return err
	}
	if len(todo) == 0 {
		return nil
	}
	if _, err := conn.Exec(ctx, versionTable); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, m := range todo {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
		}
	}
	return nil
}
