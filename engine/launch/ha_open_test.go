package launch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
)

// TestNodeThatCannotOpenGivesTheLeaseUp: a node that wins the lease but
// cannot open its engine (here its runner binary is missing) gives the
// lease up rather than take it again at its next try, so that a node that
// can lead does; it then waits longer before each try (ha.OpenBackoff).
func TestNodeThatCannotOpenGivesTheLeaseUp(t *testing.T) {
	t.Parallel()
	c := newTakeoverCluster(t, 2)
	broken, good := c.nodes[0], c.nodes[1]
	broken.runner = filepath.Join(t.TempDir(), "no-such-runner")
	broken.start()
	failures := func() int {
		b, _ := os.ReadFile(broken.log)
		return strings.Count(string(b), "cannot open the engine for this term")
	}
	c.until(broken.name+" wins the lease and fails to open its engine", time.Minute, func() bool { return failures() >= 1 })
	good.start()
	wait.With{Seen: func() string {
		b, _ := os.ReadFile(broken.log)
		return "lease held by " + c.holder() + "; " + broken.name + "'s log:\n" + string(b)
	}}.Until(t, good.name+" leads, its engine open", time.Minute, func() bool {
		return c.holder() == good.name && good.serves()
	})
	cl, err := good.client.Cluster(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// One try a second for as long as this took would be one failure a
	// second; the back-off doubles from two.
	if n, secs := failures(), int(time.Since(c.began).Seconds()); n > max(2, secs/2) {
		t.Fatalf("%s failed to open %d times in %ds (epoch now %d); want a growing wait between tries", broken.name, n, secs, cl.Epoch)
	}
}
