// The cluster a remote console's node belongs to, read beside each
// snapshot for the header (docs/design.md §11).

package backend

import "context"

// withCluster returns s with the cluster as the node sees it. A node
// that cannot say (an older daemon, a store it cannot read now) leaves
// it out: the header then shows none, and the snapshot is good anyway.
func (r *Remote) withCluster(ctx context.Context, s *Snapshot) *Snapshot {
	c, err := r.c.Cluster(ctx)
	if err != nil {
		return s
	}
	out := *s // a snapshot is immutable once made: r.last may be s
	out.Cluster = &c
	return &out
}
