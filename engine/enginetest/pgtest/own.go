// A server of one test's own, for a test that restarts or stops it: the
// shared server is every test's of the binary.

package pgtest

import (
	"errors"
	"os"
	"testing"
)

// StartOwn starts a server for t alone, stopped and removed at t's
// cleanup. It skips t when PostgreSQL is not installed, or fails it under
// CI=true.
func StartOwn(t testing.TB) *Server {
	t.Helper()
	s, err := start()
	if err != nil {
		if errors.Is(err, errNotInstalled) && os.Getenv("CI") != "true" {
			t.Skip(err.Error())
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Logf("pgtest: %v", err)
		}
	})
	return s
}
