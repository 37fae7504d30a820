package engine

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestResolveClusterID(t *testing.T) {
	idPattern := regexp.MustCompile(`^dt-[0-9a-f]{8}$`)
	t.Run("made up once and kept", func(t *testing.T) {
		dir := t.TempDir()
		store := filepath.Join(dir, "dispatch-tui.db")
		a, err := resolveClusterID(dir, "", store)
		if err != nil {
			t.Fatal(err)
		}
		if !idPattern.MatchString(a.ID) || a.AdoptLegacy {
			t.Fatalf("fresh install: got %+v, want a dt-xxxxxxxx id and no legacy adoption", a)
		}
		fi, err := os.Stat(filepath.Join(dir, ClusterIDFile))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("cluster_id file: %v, mode %v; want 0600", err, fi.Mode())
		}
		b, err := resolveClusterID(dir, "", store)
		if err != nil || b.ID != a.ID || b.AdoptLegacy {
			t.Fatalf("restart: got %+v, %v; want the kept id %s", b, err, a.ID)
		}
	})
	t.Run("upgrade adopts legacy once", func(t *testing.T) {
		dir := t.TempDir()
		store := filepath.Join(dir, "dispatch-tui.db")
		os.WriteFile(store, nil, 0o600)
		a, err := resolveClusterID(dir, "", store)
		if err != nil || !a.AdoptLegacy {
			t.Fatalf("first start of an existing install: got %+v, %v; want legacy adoption", a, err)
		}
		b, _ := resolveClusterID(dir, "", store)
		if b.AdoptLegacy || b.ID != a.ID {
			t.Fatalf("second start: got %+v, want %s without legacy adoption", b, a.ID)
		}
	})
	t.Run("configured wins", func(t *testing.T) {
		dir := t.TempDir()
		store := filepath.Join(dir, "dispatch-tui.db")
		a, err := resolveClusterID(dir, "team-a", store)
		if err != nil || a.ID != "team-a" || a.Note != "" {
			t.Fatalf("got %+v, %v", a, err)
		}
		b, _ := resolveClusterID(dir, "", store)
		if b.ID != "team-a" {
			t.Fatalf("unconfigured after configured: got %q, want the kept team-a", b.ID)
		}
		c, _ := resolveClusterID(dir, "team-b", store)
		if c.ID != "team-b" || !strings.Contains(c.Note, "team-a") {
			t.Fatalf("changed id: got %+v, want team-b with a note about team-a", c)
		}
	})
	t.Run("corrupt file", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, ClusterIDFile), []byte("Not Valid!\n"), 0o600)
		if _, err := resolveClusterID(dir, "", filepath.Join(dir, "x.db")); err == nil || !strings.Contains(err.Error(), ClusterIDFile) {
			t.Fatalf("got %v, want an error naming the file", err)
		}
	})
}
