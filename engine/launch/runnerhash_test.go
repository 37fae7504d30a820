package launch

import (
	"os"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
)

// TestStandbyHashesTheRunnerBeforeItLeads: a node hashes the runner binary
// once, while it stands by, and its takeover's open reuses that hash
// rather than reading tens of MB between winning the lease and its first
// listing.
func TestStandbyHashesTheRunnerBeforeItLeads(t *testing.T) {
	t.Parallel()
	c := newTakeoverCluster(t, 1)
	a, b := c.nodes[0], c.nodes[1]
	a.start()
	c.until(a.name+" leads", 2*time.Minute, func() bool { return c.holder() == a.name && a.serves() })
	b.start()
	hashed := func(n *takeoverNode) int {
		log, _ := os.ReadFile(n.log)
		return strings.Count(string(log), msgRunnerHashed)
	}
	seen := wait.With{Seen: func() string {
		log, _ := os.ReadFile(b.log)
		return b.name + "'s log:\n" + string(log)
	}}
	seen.Until(t, b.name+" hashes the runner binary while it stands by", time.Minute, func() bool { return hashed(b) == 1 })
	// a's death as the database sees it (takeover_bench_test.go's kill).
	c.cutFromDatabase(a)
	a.stop()
	c.sql("ALTER ROLE " + a.role + " LOGIN")
	seen.Until(t, b.name+" leads, its engine open", 2*time.Minute, func() bool { return c.holder() == b.name && b.serves() })
	if n := hashed(b); n != 1 {
		log, _ := os.ReadFile(b.log)
		t.Fatalf("%s hashed the runner binary %d times, want once, while it stood by:\n%s", b.name, n, log)
	}
}
