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

// storeURL resolves the store's URL: url_file's contents (a private file,
// as token files are) or the environment's when url is not set.
func (p *parser) storeURL(s *Store, dir string) {
	switch {
	case s.URL != "" && s.URLFile != "":
		p.fail("store.url_file", "set url or url_file, not both")
	case s.URLFile != "":
		s.URLFile = localPath(dir, s.URLFile)
		u, err := readSecret(s.URLFile, "store URL")
		if err != nil {
			p.fail("store.url_file", "%v", err)
			p.failed["store.url"] = true
		}
		s.URL = u
	case s.URL == "":
		s.URL = os.Getenv(StoreURLEnv)
	}
}

// store checks the URL's shape (nothing is contacted).
func (v *validator) store(s *Store) {
	if s.URL == "" {
		return
	}
	if err := pgstore.CheckURL(s.URL); err != nil {
		key := v.keys.of(&s.URL)
		switch {
		case s.URLFile != "":
			key = v.keys.of(&s.URLFile)
		case os.Getenv(StoreURLEnv) == s.URL:
			key = "$" + StoreURLEnv
		}
		v.add(key, "%v", err)
	}
}
