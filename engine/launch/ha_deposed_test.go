package launch

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/view"
)

// TestDeposedLeadersEventsWaitForItsNextTerm: a leader cut from the
// database loses the lease on its own clock and cannot write then (its
// store refuses its epoch); the new leader records leader_lost "deposed"
// for it at once, and the deposed node's own leader_lost, with its
// reason, is written when it next leads (docs/design.md §11).
func TestDeposedLeadersEventsWaitForItsNextTerm(t *testing.T) {
	t.Parallel()
	c := newTakeoverCluster(t, 2)
	a, b := c.nodes[0], c.nodes[1]
	a.start()
	c.until(a.name+" leads", time.Minute, func() bool { return c.holder() == a.name && a.serves() })
	b.start()
	// Cut a from the database (its login refused, its sessions ended),
	// leaving its process running.
	c.cutFromDatabase(a)
	c.until(b.name+" leads", 2*time.Minute, func() bool { return c.holder() == b.name && b.serves() })
	evs := events(t, b)
	if !hasNodeEvent(evs, b.name, "leader_lost", a.name, "deposed", fmt.Sprintf("node %s no longer leads", a.name)) {
		t.Fatalf("no leader_lost \"deposed\" for %s by %s once it led:%s", a.name, b.name, showEvents(evs))
	}
	if hasNodeEvent(evs, a.name, "leader_lost", a.name, "lost", "") {
		t.Fatalf("%s's own leader_lost was written while it could not reach the store:%s", a.name, showEvents(evs))
	}
	// a back on the database, b stopped: a leads again and writes what
	// it kept.
	c.sql("ALTER ROLE " + a.role + " LOGIN")
	b.stop()
	c.until(a.name+" leads again", 2*time.Minute, func() bool { return c.holder() == a.name && a.serves() })
	evs = events(t, a)
	// Why is the clock's, or a write refused on it first: either way
	// written now, not then.
	if !hasNodeEvent(evs, a.name, "leader_lost", a.name, "lost", "(recorded when the node next led)") {
		t.Fatalf("no leader_lost of %s's own, with why, once it led again:%s", a.name, showEvents(evs))
	}
}

func events(t *testing.T, n *takeoverNode) []view.Event {
	t.Helper()
	evs, err := n.client.Events(context.Background(), 0, 10000)
	if err != nil {
		t.Fatalf("%s's events: %v", n.name, err)
	}
	return evs
}

// hasNodeEvent: an event recorded by node, of kind on target, with action
// and a reason containing reason.
func hasNodeEvent(evs []view.Event, node, kind, target, action, reason string) bool {
	for _, e := range evs {
		if e.Actor == "node:"+node && e.Kind == kind && e.Target == target && e.Action == action && strings.Contains(e.Reason, reason) {
			return true
		}
	}
	return false
}

func showEvents(evs []view.Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Actor != "" && strings.HasPrefix(e.Actor, "node:") {
			fmt.Fprintf(&b, "\n  %s %s %s %s: %s", e.Actor, e.Kind, e.Target, e.Action, e.Reason)
		}
	}
	return b.String()
}
