// An entry of the engine's event log, as the edge shows it.

package view

import "time"

// Event is one entry of the persistent event log: an operator verb, a state
// change, or a cloud error.
type Event struct {
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"`
	Actor  string    `json:"actor"`  // "operator:<name>", "scheduler", "pool", ...
	Kind   string    `json:"kind"`   // "verb", "state", "cloud_error", ...
	Target string    `json:"target"` // container or instance id, or "scheduler"
	Action string    `json:"action"` // verb name or new state
	Reason string    `json:"reason,omitempty"`
}
