// The engine's edge types (package view) under the names the engine's own
// code has always used: one definition, in view.

package queue

import "dispatch-tui/engine/view"

type (
	// State is a container's lifecycle state.
	State = view.State
	// ReasonCode is the machine-readable part of a pending or cancel reason.
	ReasonCode = view.ReasonCode
	// Pending is a compact pending reason set by every scheduler pass.
	Pending = view.Pending
	// Constraints are a container's runtime resource needs.
	Constraints = view.Constraints
	// Scheduling holds placement hints.
	Scheduling = view.Scheduling
	// Duration is a time.Duration that reads and writes JSON as "90s".
	Duration = view.Duration
	// HealthCheck is a container's health check as submitted and stored.
	HealthCheck = view.HealthCheck
	// Event is one entry of the persistent event log.
	Event = view.Event
	// Spec is what a user submits.
	Spec = view.Spec
)

// Container states.
const (
	Queued    = view.Queued
	Locked    = view.Locked
	Running   = view.Running
	Complete  = view.Complete
	Cancelled = view.Cancelled
)

// States lists every state in lifecycle order.
var States = view.States

// Reason codes.
const (
	ReasonNone             = view.ReasonNone
	ReasonPosition         = view.ReasonPosition
	ReasonQuota            = view.ReasonQuota
	ReasonBooting          = view.ReasonBooting
	ReasonCreating         = view.ReasonCreating
	ReasonCapacity         = view.ReasonCapacity
	ReasonBootFailing      = view.ReasonBootFailing
	ReasonNoFit            = view.ReasonNoFit
	ReasonHeld             = view.ReasonHeld
	ReasonPaused           = view.ReasonPaused
	ReasonPriorityZero     = view.ReasonPriorityZero
	ReasonStartup          = view.ReasonStartup
	ReasonRequeued         = view.ReasonRequeued
	ReasonKilled           = view.ReasonKilled
	ReasonMaxAttempts      = view.ReasonMaxAttempts
	ReasonKilledExternally = view.ReasonKilledExternally
	ReasonPreempted        = view.ReasonPreempted
	ReasonUnhealthy        = view.ReasonUnhealthy
	ReasonNoLabels         = view.ReasonNoLabels
	ReasonSupervisorLimit  = view.ReasonSupervisorLimit
	ReasonFreeing          = view.ReasonFreeing
	ReasonCloudRefused     = view.ReasonCloudRefused
	ReasonBudget           = view.ReasonBudget
)
