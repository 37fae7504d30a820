// The chaos soak with the queue in PostgreSQL: one seed in make test
// (docs/design.md §3, Persistence).

package engine

import (
	"os"
	"testing"

	"dispatch-tui/engine/enginetest/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

func TestChaosSoakPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("soak skipped in -short mode")
	}
	chaosSoak(t, 42, pgtest.NewDatabase(t))
}
