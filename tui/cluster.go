// The header's word on the cluster: the node the console talks to, the
// leader and its epoch, the standbys and how long ago each was heard
// from (docs/design.md §11).

package tui

import (
	"strconv"
	"strings"
	"time"

	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/view"
)

// clusterHeader is that word, "" for no cluster or a dispatcher alone.
func clusterHeader(c *view.Cluster, now time.Time) string {
	if c == nil || len(c.Nodes) <= 1 && c.Epoch == 0 {
		return ""
	}
	role := view.RoleStandby
	if c.Self == c.Leader {
		role = view.RoleLeader
	}
	leader := "NONE"
	if c.Leader != "" {
		leader = termsafe.Escape(c.Leader)
	}
	var b strings.Builder
	b.WriteString("node " + termsafe.Escape(c.Self) + " (" + role + ")  leader " + leader + " epoch " + strconv.FormatInt(c.Epoch, 10))
	if sb := c.Standbys(); len(sb) > 0 {
		parts := make([]string, len(sb))
		for i, n := range sb {
			parts[i] = termsafe.Escape(n.Name) + " " + max(now.Sub(n.LastSeen), 0).Round(time.Second).String()
		}
		b.WriteString("  standbys " + strings.Join(parts, ", "))
	}
	return b.String()
}

// takeoverFor is how long the flash line tells of a takeover: longer than
// a key's flash, as nobody may be looking the moment it happens.
const takeoverFor = 10 * time.Second

// takeover is the banner for what changed between two reads of the
// cluster, "" when no takeover shows in them: a leader now whose epoch is
// higher than before's (another node took the lease, or the same one took
// it back). A first read (before nil) tells of none.
func takeover(before, now *view.Cluster) string {
	if before == nil || now == nil || now.Leader == "" || now.Epoch <= before.Epoch {
		return ""
	}
	was := "none"
	if before.Leader != "" {
		was = termsafe.Escape(before.Leader) + " (epoch " + strconv.FormatInt(before.Epoch, 10) + ")"
	}
	return "takeover: leader now " + termsafe.Escape(now.Leader) + " (epoch " + strconv.FormatInt(now.Epoch, 10) + "), was " + was
}
