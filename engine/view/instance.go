// An instance as the engine's edge shows it (docs/design.md §3, "Instance
// view"; its states §6).

package view

import (
	"time"

	"dispatch-tui/cloud"
)

// InstanceID is a provider's id of an instance: the drivers' type, so
// that an id needs no conversion on its way from the pool to the edge.
type InstanceID = cloud.InstanceID

// InstanceState is an instance's state in the pool (engine/worker's
// states.txt draws the changes between them), or a display-only state of
// a row that is not the pool's.
type InstanceState string

// Instance states.
const (
	InstanceUnknown  InstanceState = "unknown"  // listed by the cloud, not yet probed
	InstanceBooting  InstanceState = "booting"  // created by us, not yet ready
	InstanceIdle     InstanceState = "idle"     // ready, no containers
	InstanceRunning  InstanceState = "running"  // ready, containers running
	InstanceShutdown InstanceState = "shutdown" // destroy requested
	// InstanceRefused is a host the driver refuses to use (display only).
	InstanceRefused InstanceState = "refused"
	// InstanceForeign is another dispatcher's instance (display only).
	InstanceForeign InstanceState = "foreign"
)

// IdleBehavior is what the pool does with an instance when it is idle.
type IdleBehavior string

// Idle behaviours (docs/design.md §4).
const (
	IdleRun   IdleBehavior = "run"   // normal: gets containers, shut down after timeout_idle
	IdleHold  IdleBehavior = "hold"  // no new containers, never shut down automatically
	IdleDrain IdleBehavior = "drain" // no new containers, shut down as soon as idle
)

// Instance is an instance as the engine shows it: a copy, safe to keep.
// Its JSON is the API's.
type Instance struct {
	ID           InstanceID    `json:"id"` // "" while the create call is in flight
	Type         string        `json:"type"`
	ProviderType string        `json:"provider_type"`
	Address      string        `json:"address"`
	Price        float64       `json:"price"`
	State        InstanceState `json:"state"`
	IdleBehavior IdleBehavior  `json:"idle_behavior"`
	// Containers are the ids the pool believes are on the instance: those
	// the runner last listed as running plus starts in flight or done since.
	Containers    []string  `json:"containers"`
	LastContainer string    `json:"last_container,omitempty"`
	LastBusy      time.Time `json:"last_busy,omitzero"`
	AppearedAt    time.Time `json:"appeared_at,omitzero"`
	LastProbe     time.Time `json:"last_probe,omitzero"`
	LastError     string    `json:"last_error,omitempty"`
	// ProbeFailing: the last probe failed; nothing starts there until one
	// succeeds.
	ProbeFailing bool `json:"probe_failing,omitempty"`
	// Preempted: the provider is taking the instance back (a spot
	// interruption).
	Preempted bool `json:"preempted,omitempty"`
	// UnreachableSince is when the current run of failed probes started
	// (zero while probes succeed, and while booting).
	UnreachableSince time.Time `json:"unreachable_since,omitzero"`
	// ProbeError is the last failed probe's error while probes fail.
	ProbeError string `json:"probe_error,omitempty"`
	// CreatedAt is when the instance was created (zero when unknown);
	// AppearedAt is when this dispatcher first saw it.
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// Created is when the instance was created, or when this dispatcher first
// saw it (an instance of an older version): the age the CLI and the
// console show.
func (v *Instance) Created() time.Time {
	if !v.CreatedAt.IsZero() {
		return v.CreatedAt
	}
	return v.AppearedAt
}
