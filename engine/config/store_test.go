package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreURL: [store] url, url_file (private only) and the environment,
// in that order; check-config refuses a URL of the wrong shape, naming
// where it came from.
func TestStoreURL(t *testing.T) {
	dir := t.TempDir()
	const good = "postgres://dispatch@db.example:5432/dispatch"
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("url", good+"\n", 0o600)
	open := write("url-open", good+"\n", 0o644)
	write("url-bad", "mysql://x/y\n", 0o600)
	for _, tc := range []struct {
		name, body, env string
		want            Store
		wantErr         string
	}{
		{"none: the embedded store", "", "", Store{}, ""},
		{"url", "[store]\nurl = \"" + good + "\"\n", "", Store{URL: good}, ""},
		{"url_file", "[store]\nurl_file = \"url\"\n", "", Store{URL: good, URLFile: filepath.Join(dir, "url")}, ""},
		{"the environment", "", good, Store{URL: good}, ""},
		{"url wins over the environment", "[store]\nurl = \"postgres://a@b/c\"\n", good, Store{URL: "postgres://a@b/c"}, ""},
		{"url_file open to others", "[store]\nurl_file = \"url-open\"\n", "", Store{}, "accessible by group or others (mode 0644): run chmod 600 " + open},
		{"both", "[store]\nurl = \"" + good + "\"\nurl_file = \"url\"\n", "", Store{}, "store.url_file: set url or url_file, not both"},
		{"not postgres", "[store]\nurl = \"mysql://x/y\"\n", "", Store{}, "store.url: want a URL starting postgres://"},
		{"no database", "[store]\nurl = \"postgres://a@b\"\n", "", Store{}, "store.url: the URL names no database"},
		{"bad file contents", "[store]\nurl_file = \"url-bad\"\n", "", Store{}, "store.url_file: want a URL starting postgres://"},
		{"bad environment", "", "postgres//x", Store{}, "$" + StoreURLEnv + ": want a URL starting postgres://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(StoreURLEnv, tc.env)
			path := write("c.toml", tc.body, 0o600)
			c, err := Load(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load: %v; want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Store != tc.want {
				t.Fatalf("Store = %+v, want %+v", c.Store, tc.want)
			}
		})
	}
}
