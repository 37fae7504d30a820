// The runner binary: its path and its hash, which every engine's pool deploys by,
// kept by an HA node for its terms.

package launch

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"dispatch-tui/engine/runner"
)

// msgRunnerHashed is logged each time the runner binary is hashed (tests
// count it).
const msgRunnerHashed = "runner binary hashed"

// runnerBinary is the executable deployed as the runner: opts.RunnerBinary,
// or this process's own.
func runnerBinary(opts Options) (string, error) {
	if opts.RunnerBinary != "" {
		return opts.RunnerBinary, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find own executable to deploy as the runner: %w", err)
	}
	return self, nil
}

// hashRunner hashes the runner binary at path (tens of MB: a noticeable
// share of a loaded machine's second).
func hashRunner(path string, log *slog.Logger) (string, error) {
	began := time.Now()
	hash, err := runner.FileHash(path)
	if err != nil {
		return "", fmt.Errorf("hash runner binary: %w", err)
	}
	log.Info(msgRunnerHashed, "path", path, "sha256", hash, "took", time.Since(began))
	return hash, nil
}

// runnerHashes keeps the runner binary's hash for an HA node's terms: it
// is hashed once, while the node stands by, not between winning the lease
// and the term's first listing (a takeover's path); again only when the
// file changed (another file, size or time: an upgrade put in place).
type runnerHashes struct {
	mu   sync.Mutex
	path string
	info os.FileInfo // as it was hashed; nil = none yet
	hash string
}

// get is the hash of the runner binary at path.
func (c *runnerHashes) get(path string, log *slog.Logger) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	before, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("hash runner binary: %w", err)
	}
	if c.info != nil && c.path == path && unchanged(c.info, before) {
		return c.hash, nil
	}
	hash, err := hashRunner(path, log)
	if err != nil {
		return "", err
	}
	// Kept only if the file did not change while it was read.
	if after, err := os.Stat(path); err == nil && unchanged(before, after) {
		c.path, c.info, c.hash = path, before, hash
	}
	return hash, nil
}

func unchanged(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
