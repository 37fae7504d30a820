// Package backend is the TUI's only view of a dispatcher: a Backend gives
// snapshots, change notifications and the operator verbs. Two
// implementations: InProcess wraps an *engine.Engine; Remote wraps the
// management API client (for --connect URL).
package backend

import (
	"context"
	"time"

	"dispatch-tui/engine/view"
)

// Snapshot is everything the console shows, taken at one moment. It is
// immutable once returned (but for Rows, see there): the TUI may keep it
// and share it between views.
type Snapshot struct {
	TakenAt time.Time
	// ListedAt is when Containers was read: TakenAt, or earlier when a
	// remote console paces its reads of a very large list (the summary
	// is then newer than the list).
	ListedAt  time.Time
	Summary   view.Summary
	Instances []view.Instance
	// Containers are the full records, from a backend that reads them
	// whole for each snapshot (in process); nil from a remote one, whose
	// details come from Backend.Container.
	Containers []view.Container
	// Rows are the containers as the tables need them (nil: made from
	// Containers). A remote backend's are its copy, updated in place by
	// its next Snapshot: read them through their methods.
	Rows   *Rows
	Types  []view.TypeSummary
	Events []view.Event // the most recent, oldest first
	// Cluster is the cluster of dispatchers as the node the console
	// talks to sees it; nil when the backend reports none (in process,
	// or a dispatcher that cannot tell).
	Cluster *view.Cluster
}

// Backend is a dispatcher seen from the console.
type Backend interface {
	// Describe names the backend for the header, e.g. "local (in-process)"
	// or "remote http://host:9006".
	Describe() string
	// Snapshot returns the current state.
	Snapshot(ctx context.Context) (*Snapshot, error)
	// Changes returns a channel that receives a value (coalesced) when
	// the state may have changed; it is closed when ctx ends. A remote
	// backend may simply tick.
	Changes(ctx context.Context) <-chan struct{}
	// Container returns a container's full record, for its details and
	// YAML (the snapshot's rows carry only what the tables show).
	Container(ctx context.Context, id string) (view.Container, error)
	// Logs returns a container's output (the last tail lines if tail > 0).
	Logs(ctx context.Context, id string, tail int) ([]byte, error)

	// InstanceVerb applies an instance verb to an instance.
	InstanceVerb(ctx context.Context, id string, v view.InstanceVerb, reason string) error
	// ContainerVerb applies hold, release or kill to a container.
	ContainerVerb(ctx context.Context, id string, v view.ContainerVerb, reason string) error
	// ContainersVerb applies one verb to many containers in bulk (one
	// request, or one store transaction, per batch): hold, release, kill,
	// or view.ContainerPriority with the priority given. failed says why
	// for each id it did not apply to; err is about the whole (not
	// reached, a refused request), when nothing is known of the ids.
	ContainersVerb(ctx context.Context, ids []string, v view.ContainerVerb, priority int, reason string) (failed map[string]error, err error)
	// SetPriority changes a container's priority.
	SetPriority(ctx context.Context, id string, priority int) error
	// SetPaused pauses or resumes the scheduler.
	SetPaused(ctx context.Context, paused bool, reason string) error

	// Cost is the cost report of all the ledger keeps, summed by by
	// ("type", "state" or "label=KEY"; "" = the server's default).
	Cost(ctx context.Context, by string) (*view.CostReport, error)
	// ContainerCost is what a container has cost so far, in dollars.
	ContainerCost(ctx context.Context, id string) (float64, error)
}
