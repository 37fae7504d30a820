// The store commands: `store migrate` brings a PostgreSQL store's schema
// up to date, or with --dry-run prints what it would apply.

package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"dispatch-tui/engine/api/cli"
	"dispatch-tui/engine/config"
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
	cmd.AddCommand(migrate)
	return cmd
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
