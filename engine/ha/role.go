// The hook the API reads to answer as leader or as standby.

package ha

// Roles tells a node's role: whether it leads now (and may act, by its
// own clock), with which epoch, and the lease row as last read (the
// leader's name and address, for a standby to forward to). The daemon
// implements it; engine/api reads it. Cheap: no database call.
type Roles interface {
	Role() (leading bool, epoch int64, leader Holder)
}
