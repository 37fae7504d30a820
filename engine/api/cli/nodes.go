// ls nodes: the dispatchers of a cluster, as the node asked sees them
// (GET /v1/cluster; docs/design.md §11).

package cli

import (
	"context"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/termsafe"
	"dispatch-tui/engine/view"
)

func lsNodesCmd(env *Env) *cobra.Command {
	cmd, _ := newListCmd(env, "nodes", []string{"node"}, "List the dispatchers of the cluster: role, address, last heartbeat, epoch", func(_ *listFlags) listing {
		return func(ctx context.Context, c *api.Client) (any, []string, *table, []string, error) {
			cl, err := c.Cluster(ctx)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			names := make([]string, len(cl.Nodes))
			for i, n := range cl.Nodes {
				names[i] = n.Name
			}
			return cl, names, nodeTable(cl, env.now()), nodeFooter(cl), nil
		}
	})
	cmd.Long = `List the dispatchers sharing this store: each node's role and address as its
last heartbeat said, how long ago that was (a node gone quiet keeps its row),
and the lease's epoch it saw. The node asked answers for itself; a single
dispatcher lists itself, leading at epoch 0.`
	cmd.Example = `  dispatch-tui ls nodes
  dispatch-tui --server https://a:7070,https://b:7070 ls nodes -o json`
	return cmd
}

func nodeTable(c view.Cluster, now time.Time) *table {
	t := &table{cols: []column{
		{name: "NAME"}, {name: "ROLE"}, {name: "ADDRESS", flex: true, min: 16, drop: 3},
		{name: "LAST SEEN", drop: 2, clock: true}, {name: "EPOCH"}, {name: "TLS FINGERPRINT", wide: true},
	}}
	for _, n := range c.Nodes {
		role := n.Role
		if n.Role == view.RoleLeader && n.Name != c.Leader {
			// Its last word, no longer the lease's: it stopped or lost it.
			role += " (lease gone)"
		}
		t.add(termsafe.Escape(n.Name), termsafe.Escape(role), dash(termsafe.Escape(n.Address)), ago(now, n.LastSeen), strconv.FormatInt(n.Epoch, 10),
			dash(termsafe.Escape(n.TLSFingerprint)))
	}
	return t
}

// nodeFooter names the lease's leader and epoch, and the node that
// answered.
func nodeFooter(c view.Cluster) []string {
	leader := "none (an election is under way, or no node reaches the store)"
	if c.Leader != "" {
		leader = termsafe.Escape(c.Leader) + " at epoch " + strconv.FormatInt(c.Epoch, 10)
	}
	return []string{"leader: " + leader + "; answered by " + termsafe.Escape(c.Self)}
}
