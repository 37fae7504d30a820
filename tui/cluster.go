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
