// Package store is the interface between the queue's in-memory index
// (engine/queue) and where its state is kept durably: what a flush writes
// and what a start-up loads (docs/design.md §3, Persistence). The queue decides what
// changed and encodes it; a Store only keeps it. The embedded
// implementation is engine/store/bolt.
package store

// Store keeps the queue's records, events and stored output. Records and
// events are the queue's JSON, opaque here: a Store writes and returns
// them as they are. Flush and Load are called by one goroutine at a time
// (the queue's flush lock); the other methods may be called concurrently.
type Store interface {
	// Load reads what the store holds: every container record goes to
	// recs through a Pipeline (in no particular order, each decoded on any
	// goroutine and added on the caller's, in the order read); ev is called
	// with the newest recentEvents events, oldest first. It returns once
	// every record is added, or at the first that fails.
	Load(recentEvents int, recs Records, ev func(seq uint64, body []byte) error) (Loaded, error)
	// LoadPart calls fn with every record of part name (a Batch's
	// PartWrite of that name wrote them), in the byte order of their keys
	// (a part may load its records in an order it chose its keys for);
	// body is valid during the call only.
	LoadPart(name string, fn func(key, value []byte) error) error
	// Due reports whether a flush with nothing new to write still has
	// work for the store (bbolt: a journal to fold). records is how many
	// containers the queue holds; pass, whether the flush is a
	// scheduler pass's.
	Due(records int, pass bool) bool
	// Flush writes b in one transaction and returns once it is durable.
	// On error nothing of b is written, and the caller may retry it.
	Flush(b *Batch) error
	// Submit writes new records and their events (b holds no drops)
	// durably; concurrent submits may share a transaction.
	Submit(b *Batch) error
	// PutOutputs stores the output of containers ids (outputs[i] is
	// ids[i]'s) in one transaction.
	PutOutputs(ids []string, outputs [][]byte) error
	// Output returns a container's stored output, if any.
	Output(id string) ([]byte, bool, error)
	// Events calls fn with each stored event of Seq > since, oldest
	// first, until fn returns false (body is valid during the call only).
	Events(since uint64, fn func(seq uint64, body []byte) (bool, error)) error
	// FirstEvent returns the oldest stored event's Seq; ok is false while
	// none is stored.
	FirstEvent() (seq uint64, ok bool)
	// ClusterID returns the cluster id the store keeps ("" while it keeps
	// none): the identity in the owner tag of what the dispatchers on this
	// store own, so it lives with the queue, not in a node's state dir.
	ClusterID() (string, error)
	// KeepClusterID keeps id as the cluster id, durably, unless the store
	// keeps one already; either way it returns the one kept (so two
	// dispatchers starting together agree on the first one's).
	KeepClusterID(id string) (string, error)
	// PartNames returns the names of the parts that hold records, sorted
	// (what store copy copies besides the queue).
	PartNames() ([]string, error)
	// Close finishes the store's own work and releases it; the queue has
	// flushed before.
	Close() error
}

// Loaded is what Load returns besides the records and events.
type Loaded struct {
	NextEvent uint64 // the Seq the next event takes (1 in an empty store)
	Paused    bool   // the scheduler's pause flag
}

// MaxDeletesPerFlush bounds what one flush deletes (containers beyond
// keep_finished, events beyond retention), so that lowering a limit on a
// large store spreads the work over many passes.
const MaxDeletesPerFlush = 10000
