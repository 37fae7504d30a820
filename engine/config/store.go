// The [store] section: where the queue is kept (the embedded bbolt file,
// or PostgreSQL), its URL read from the config, a private file or the
// environment.

package config

import (
	"os"

	"dispatch-tui/engine/store/pgstore"
)

// Store is the [store] section. With no URL the queue is the embedded
// bbolt file in the state dir.
type Store struct {
	// URL is the PostgreSQL connection URL (postgres://…): from url,
	// else the file url_file names, else $DISPATCH_TUI_STORE_URL.
	URL string
	// URLFile is the file the URL was read from ("" if none).
	URLFile string
}

// StoreURLEnv is the environment variable that holds the store's URL when
// the config names none.
const StoreURLEnv = "DISPATCH_TUI_STORE_URL"

// Kind names the store in use: "postgres" or "bolt".
func (s Store) Kind() string {
	if s.URL != "" {
		return "postgres"
	}
	return "bolt"
}

// storeKeys is [store].
var storeKeys = []*row{
	commented(str("store.url", "", func(c *Config, _ int) *string { return &c.Store.URL },
		`the PostgreSQL URL (postgres://…); "" = url_file, else $`+StoreURLEnv+`, else the embedded store`, storeURLShape)),
	commented(path("store.url_file", func(c *Config, _ int) *string { return &c.Store.URLFile },
		"a private file (0600) holding the URL")),
}

// resolveStoreURL reads the store's URL from url_file (a private file, as
// token files are) or from the environment when url is not set.
func (p *parser) resolveStoreURL(s *Store) {
	switch {
	case s.URL != "" && s.URLFile != "":
		p.fail("store.url_file", "set url or url_file, not both")
	case s.URLFile != "" && !p.failed["store.url_file"]:
		u, err := readSecretFile(s.URLFile, "store URL")
		if err != nil {
			p.fail("store.url_file", "%v", err)
			p.failed["store.url"] = true
		}
		s.URL = u
	case s.URL == "":
		s.URL = os.Getenv(StoreURLEnv)
	}
}

// storeURLShape checks the URL's shape (nothing is contacted), naming
// where it came from.
func storeURLShape(u string, s *site) {
	if u == "" {
		return
	}
	if err := pgstore.CheckURL(u); err != nil {
		switch {
		case s.c.Store.URLFile != "":
			s.key, s.lineKey = "store.url_file", "store.url_file"
		case os.Getenv(StoreURLEnv) == u:
			s.key = "$" + StoreURLEnv
		}
		s.bad("%v", err)
	}
}
