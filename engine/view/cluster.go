// The cluster of dispatchers as GET /v1/cluster, `ls nodes` and the
// console's header show it (docs/design.md §11).

package view

import "time"

// Node roles, as a node reports its own at each heartbeat.
const (
	RoleLeader  = "leader"
	RoleStandby = "standby"
)

// Cluster is GET /v1/cluster: the lease's leader and epoch, and every
// node that has ever heartbeat on the store. A single dispatcher answers
// with itself as the leader at epoch 0.
type Cluster struct {
	// Leader names the node whose lease is valid now; "" when none is.
	Leader string `json:"leader"`
	Epoch  int64  `json:"epoch"`
	// Self names the node that answered (not forwarded: each node
	// answers for itself).
	Self  string        `json:"self"`
	Nodes []ClusterNode `json:"nodes"`
}

// ClusterNode is one node as its last heartbeat left it: a node gone
// quiet keeps its row, its LastSeen telling how long ago it spoke.
type ClusterNode struct {
	Name     string    `json:"name"`
	Role     string    `json:"role"` // RoleLeader or RoleStandby, as the node last said
	Address  string    `json:"address"`
	LastSeen time.Time `json:"last_seen"` // the database's clock
	Epoch    int64     `json:"epoch"`     // the lease's epoch the node saw then
	// TLSFingerprint is the hex SHA-256 of the certificate the node's
	// API serves ("" over plain HTTP): what a standby, or a client's
	// --tls-fingerprint, pins.
	TLSFingerprint string `json:"tls_fingerprint,omitempty"`
}

// Standbys are the nodes other than the leader.
func (c Cluster) Standbys() []ClusterNode {
	var out []ClusterNode
	for _, n := range c.Nodes {
		if n.Name != c.Leader {
			out = append(out, n)
		}
	}
	return out
}
