package engine

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/store"
)

// clusterIDStores runs fn on a fresh state dir with each store: the
// embedded file in it, and a PostgreSQL database. open opens the store
// afresh (a restart) and says whether the embedded file was there.
func clusterIDStores(t *testing.T, fn func(t *testing.T, cfg *config.Config, open func() (store.Store, bool))) {
	for _, kind := range []string{"bolt", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			cfg := config.Default()
			cfg.Dispatcher.StateDir = t.TempDir()
			if kind == "postgres" {
				cfg.Store.URL = pgtest.NewDatabase(t)
			}
			open := func() (store.Store, bool) {
				t.Helper()
				st, existed, err := OpenStore(cfg, "")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st, existed
			}
			fn(t, cfg, open)
		})
	}
}

// resolveOnce opens the store, resolves and closes it (one start).
func resolveOnce(t *testing.T, cfg *config.Config, open func() (store.Store, bool)) ClusterIdentity {
	t.Helper()
	st, existed := open()
	ci, err := ResolveClusterID(cfg, st, existed)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	return ci
}

func TestResolveClusterID(t *testing.T) {
	idPattern := regexp.MustCompile(`^dt-[0-9a-f]{8}$`)
	t.Run("made up once and kept in the store", func(t *testing.T) {
		clusterIDStores(t, func(t *testing.T, cfg *config.Config, open func() (store.Store, bool)) {
			a := resolveOnce(t, cfg, open)
			if !idPattern.MatchString(a.ID) || a.AdoptLegacy {
				t.Fatalf("fresh install: got %+v, want a dt-xxxxxxxx id and no legacy adoption", a)
			}
			if _, err := os.Stat(filepath.Join(cfg.Dispatcher.StateDir, ClusterIDFile)); err == nil {
				t.Fatalf("a %s file was written in the state dir: the store keeps the id", ClusterIDFile)
			}
			st, _ := open()
			kept, err := st.ClusterID()
			st.Close()
			if err != nil || kept != a.ID {
				t.Fatalf("the store keeps %q (%v), want %s", kept, err, a.ID)
			}
			// Another node of the cluster: its own, empty state dir.
			cfg.Dispatcher.StateDir = t.TempDir()
			b := resolveOnce(t, cfg, open)
			if cfg.Store.URL != "" && (b.ID != a.ID || b.AdoptLegacy) {
				t.Fatalf("another node on the same database: got %+v; want the kept id %s", b, a.ID)
			}
		})
	})
	t.Run("upgrade: the state dir's file moves into the store", func(t *testing.T) {
		clusterIDStores(t, func(t *testing.T, cfg *config.Config, open func() (store.Store, bool)) {
			os.WriteFile(filepath.Join(cfg.Dispatcher.StateDir, ClusterIDFile), []byte("dt-0badc0de\n"), 0o600)
			a := resolveOnce(t, cfg, open)
			if a.ID != "dt-0badc0de" || a.AdoptLegacy {
				t.Fatalf("got %+v, want the file's dt-0badc0de without legacy adoption", a)
			}
			os.Remove(filepath.Join(cfg.Dispatcher.StateDir, ClusterIDFile))
			if b := resolveOnce(t, cfg, open); b.ID != a.ID {
				t.Fatalf("without the file: got %+v, want %s from the store", b, a.ID)
			}
		})
	})
	t.Run("upgrade from before cluster ids adopts legacy once", func(t *testing.T) {
		cfg := config.Default()
		cfg.Dispatcher.StateDir = t.TempDir()
		os.WriteFile(filepath.Join(cfg.Dispatcher.StateDir, StoreFile), nil, 0o600)
		open := func() (store.Store, bool) {
			st, existed, err := OpenStore(cfg, "")
			if err != nil {
				t.Fatal(err)
			}
			return st, existed
		}
		if a := resolveOnce(t, cfg, open); !a.AdoptLegacy {
			t.Fatalf("first start of an existing install: got %+v; want legacy adoption", a)
		}
		if b := resolveOnce(t, cfg, open); b.AdoptLegacy {
			t.Fatalf("second start: got %+v, want no legacy adoption", b)
		}
	})
	t.Run("configured wins", func(t *testing.T) {
		clusterIDStores(t, func(t *testing.T, cfg *config.Config, open func() (store.Store, bool)) {
			cfg.Dispatcher.ClusterID = "team-a"
			if a := resolveOnce(t, cfg, open); a.ID != "team-a" || a.Note != "" {
				t.Fatalf("got %+v", a)
			}
			cfg.Dispatcher.ClusterID = ""
			if b := resolveOnce(t, cfg, open); b.ID != "team-a" {
				t.Fatalf("unconfigured after configured: got %q, want the kept team-a", b.ID)
			}
			cfg.Dispatcher.ClusterID = "team-b"
			if c := resolveOnce(t, cfg, open); c.ID != "team-b" || !strings.Contains(c.Note, "team-a") {
				t.Fatalf("changed id: got %+v, want team-b with a note about team-a", c)
			}
		})
	})
	t.Run("two starts at once agree", func(t *testing.T) {
		clusterIDStores(t, func(t *testing.T, cfg *config.Config, open func() (store.Store, bool)) {
			if cfg.Store.URL == "" {
				return // one process holds the embedded file
			}
			var wg sync.WaitGroup
			ids := make([]string, 8)
			for i := range ids {
				st, _ := open()
				wg.Add(1)
				go func() {
					defer wg.Done()
					ci, err := ResolveClusterID(cfg, st, false)
					if err != nil {
						t.Error(err)
					}
					ids[i] = ci.ID
				}()
			}
			wg.Wait()
			for _, id := range ids {
				if id != ids[0] {
					t.Fatalf("starts at once took ids %q: want one", ids)
				}
			}
		})
	})
	t.Run("corrupt file", func(t *testing.T) {
		clusterIDStores(t, func(t *testing.T, cfg *config.Config, open func() (store.Store, bool)) {
			os.WriteFile(filepath.Join(cfg.Dispatcher.StateDir, ClusterIDFile), []byte("Not Valid!\n"), 0o600)
			st, existed := open()
			if _, err := ResolveClusterID(cfg, st, existed); err == nil || !strings.Contains(err.Error(), ClusterIDFile) {
				t.Fatalf("got %v, want an error naming the file", err)
			}
		})
	})
}
