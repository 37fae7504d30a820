// The store commands: `store migrate` brings a PostgreSQL store's schema
// up to date (or with --dry-run prints what it would apply); `store copy`
// moves an embedded store into an empty PostgreSQL database.

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"dispatch-tui/engine"
	"dispatch-tui/engine/api/cli"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/store"
	"dispatch-tui/engine/store/boltstore"
	"dispatch-tui/engine/store/pgstore"
)

// storeCmd is `store` and its subcommands.
func storeCmd(env *cli.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use: "store", Short: "Manage the queue's store (PostgreSQL)", GroupID: "other",
		Args: cli.NoArgs,
	}
	var dryRun bool
	migrate := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the store's schema migrations (the daemon also does at start)",
		Long: `Bring the PostgreSQL store's schema ([store] url of the config) up to date:
each migration embedded in this binary that the database lacks, in order, each
in its own transaction, under an advisory lock. With --dry-run, print what would
be applied and change nothing.`,
		Example: "  dispatch-tui store migrate --dry-run --config /etc/dispatch-tui.toml",
		Args:    cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return storeMigrate(env.ConfigPath, dryRun, env.Stdout)
		},
	}
	migrate.Flags().BoolVar(&dryRun, "dry-run", false, "print the migrations to apply; apply none")
	var from, to string
	cp := &cobra.Command{
		Use:   "copy --from STATE_DIR --to postgres://…",
		Short: "Copy an embedded store into an empty PostgreSQL database, and verify it",
		Long: `Copy the embedded store of a state dir (containers, events, stored output, the
pause flag, the cluster id, the cost ledger and the instances' kept settings) into an empty PostgreSQL database, in one transaction, then read
both back and compare their counts and a digest. A database that already holds
a queue is refused; an interrupted copy leaves it empty, so it can be run again.
Stop the dispatcher that uses the state dir first.`,
		Example: "  dispatch-tui store copy --from /var/lib/dispatch-tui --to postgres://dispatch@db/dispatch",
		Args:    cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if from == "" || to == "" {
				return cli.UsageError("store copy needs --from STATE_DIR and --to URL")
			}
			return storeCopy(from, to, env.Stdout)
		},
	}
	cp.Flags().StringVar(&from, "from", "", "the state dir whose embedded store to copy")
	cp.Flags().StringVar(&to, "to", "", "the PostgreSQL `URL` to copy into (an empty database)")
	cmd.AddCommand(migrate, cp)
	return cmd
}

// storeCopy is `store copy`.
func storeCopy(from, to string, stdout io.Writer) error {
	path := filepath.Join(from, engine.StoreFile)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no embedded store in %s: %w", from, err)
	}
	src, err := boltstore.Open(boltstore.Options{Path: path})
	if err != nil {
		return err
	}
	defer src.Close()
	have, err := store.ReadAll(src, queue.RecordKey)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	// A state dir of a version before the store kept it has the cluster
	// id in a file: the copy moves it all the same.
	if have.ClusterID, err = engine.ClusterIDOf(src, from); err != nil {
		return err
	}
	dst, err := pgstore.Open(pgstore.Options{URL: to, Timeout: 10 * time.Minute})
	if err != nil {
		return err
	}
	defer dst.Close()
	if err := dst.Import(have); err != nil {
		return fmt.Errorf("copy into PostgreSQL: %w", err)
	}
	got, err := store.ReadAll(dst, queue.RecordKey)
	if err != nil {
		return fmt.Errorf("read the copy back: %w", err)
	}
	if len(got.Records) != len(have.Records) || len(got.Events) != len(have.Events) || len(got.Outputs) != len(have.Outputs) || got.PartRecords() != have.PartRecords() || got.Digest() != have.Digest() {
		return fmt.Errorf("the copy differs from %s: %d containers, %d events, %d outputs, %d other records copied of %d, %d, %d, %d (digests %x, %x); drop and recreate the database, then copy again",
			path, len(got.Records), len(got.Events), len(got.Outputs), got.PartRecords(), len(have.Records), len(have.Events), len(have.Outputs), have.PartRecords(), got.Digest(), have.Digest())
	}
	id := have.ClusterID
	if id == "" {
		id = "(none)"
	}
	fmt.Fprintf(stdout, "copied %d containers, %d events, %d outputs, %d instance and cost records, cluster id %s; verified (sha256 %x)\n",
		len(have.Records), len(have.Events), len(have.Outputs), have.PartRecords(), id, have.Digest())
	return nil
}

// storeMigrate is `store migrate`.
func storeMigrate(configPath string, dryRun bool, stdout io.Writer) error {
	cfg, err := config.FindAndLoad(configPath)
	if err != nil {
		return err
	}
	if cfg.Store.URL == "" {
		return fmt.Errorf("the config names no PostgreSQL store ([store] url, url_file or $%s): the embedded store needs no migration", config.StoreURLEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	todo, err := pgstore.Plan(ctx, cfg.Store.URL)
	if err != nil {
		return err
	}
	switch {
	case len(todo) == 0:
		fmt.Fprintln(stdout, "the schema is up to date")
		return nil
	case dryRun:
		for _, m := range todo {
			fmt.Fprintf(stdout, "would apply migration %d (%s)\n", m.Version, m.Name)
		}
		return nil
	}
	s, err := pgstore.Open(pgstore.Options{URL: cfg.Store.URL})
	if err != nil {
		return err
	}
	s.Close()
	for _, m := range todo {
		fmt.Fprintf(stdout, "applied migration %d (%s)\n", m.Version, m.Name)
	}
	return nil
}
