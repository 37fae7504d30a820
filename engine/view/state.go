// A container's states and pending reasons, as the engine's edge shows
// them (docs/design.md §3).

package view

import "strconv"

// State is a container's lifecycle state.
type State string

// Container states (docs/design.md §3).
const (
	Queued    State = "Queued"
	Locked    State = "Locked"
	Running   State = "Running"
	Complete  State = "Complete"
	Cancelled State = "Cancelled"
)

// States lists every state in lifecycle order.
var States = [...]State{Queued, Locked, Running, Complete, Cancelled}

// Final reports whether s is Complete or Cancelled.
func (s State) Final() bool { return s == Complete || s == Cancelled }

// Waiting reports whether s waits for a start (Queued or Locked).
func (s State) Waiting() bool { return s == Queued || s == Locked }

// ReasonCode is the machine-readable part of a pending or cancel reason.
type ReasonCode string

// Reason codes.
const (
	ReasonNone         ReasonCode = ""
	ReasonPosition     ReasonCode = "POSITION"      // waiting its turn
	ReasonQuota        ReasonCode = "QUOTA"         // at quota / max_instances
	ReasonBooting      ReasonCode = "BOOTING"       // waiting for an instance to boot
	ReasonCreating     ReasonCode = "CREATING"      // waiting for an instance create to be possible
	ReasonCapacity     ReasonCode = "CAPACITY"      // fitting types are out of capacity
	ReasonBootFailing  ReasonCode = "BOOT_FAILING"  // instances of the type it waits for keep failing to boot
	ReasonNoFit        ReasonCode = "NO_FIT"        // no configured type can hold it
	ReasonHeld         ReasonCode = "HELD"          // held by an operator
	ReasonPaused       ReasonCode = "PAUSED"        // scheduler paused
	ReasonPriorityZero ReasonCode = "PRIORITY_ZERO" // priority 0: do not schedule
	ReasonStartup      ReasonCode = "STARTUP"       // dispatcher waiting for instances to be probed
	ReasonRequeued     ReasonCode = "REQUEUED"      // waiting for its previous attempt to be confirmed dead
	ReasonKilled       ReasonCode = "KILLED"        // killed by an operator or for exceeding max_run_time
	ReasonMaxAttempts  ReasonCode = "MAX_ATTEMPTS"  // gave up after max_attempts
	// ReasonKilledExternally: its last attempt was ended by a signal this
	// dispatcher did not send, and no attempts were left.
	ReasonKilledExternally ReasonCode = "KILLED_EXTERNALLY"
	// ReasonPreempted: its preemptible instance was interrupted or
	// vanished; requeued without spending an attempt.
	ReasonPreempted ReasonCode = "PREEMPTED"
	// ReasonUnhealthy: the runner killed it after its health check failed
	// retries times in a row (a failure for restart_policy on-failure).
	ReasonUnhealthy ReasonCode = "UNHEALTHY"
	// ReasonNoLabels: no configured type has every label it asks for.
	ReasonNoLabels ReasonCode = "NO_LABELS"
	// ReasonSupervisorLimit: as many supervisors as supervisor_fraction
	// allows are Locked or Running (N the limit, Arg how many).
	ReasonSupervisorLimit ReasonCode = "SUPERVISOR_LIMIT"
	// ReasonFreeing: at quota, an instance it could have used is being shut
	// down so that a container ahead of it (Arg, priority N) gets the quota.
	ReasonFreeing ReasonCode = "FREEING"
	// ReasonCloudRefused: the cloud refused creates for a reason retrying
	// will not fix (permissions, configuration); an operator must act.
	ReasonCloudRefused ReasonCode = "CLOUD_REFUSED"
	// ReasonBudget: creating an instance for it would take a dollar cap
	// past its limit ([dispatcher] max_hourly_cost or a [[budget]]).
	ReasonBudget ReasonCode = "BUDGET"
)

// Pending is a compact pending reason set by every scheduler pass. It is
// kept in memory only and rendered to text on demand, so a pass over 100,000
// containers allocates nothing for reasons.
type Pending struct {
	Code ReasonCode
	N    int    // position, instance count, or bytes, by code
	Arg  string // instance id, type name, or detail, by code
}

// Text renders the reason for people.
func (p Pending) Text() string {
	switch p.Code {
	case ReasonNone:
		return ""
	case ReasonPosition:
		return "position " + strconv.Itoa(p.N) + " in queue"
	case ReasonQuota:
		if p.N == 1 {
			return "at quota (1 instance)"
		}
		return "at quota (" + strconv.Itoa(p.N) + " instances)"
	case ReasonBooting:
		if p.Arg == "" {
			return "waiting for an instance to boot"
		}
		return "waiting for " + p.Arg + " to boot"
	case ReasonCreating:
		if p.Arg == "" {
			return "waiting to create an instance"
		}
		return "waiting to create a " + p.Arg + " instance"
	case ReasonCapacity:
		return "no capacity: " + p.Arg
	case ReasonBootFailing:
		return p.Arg // "instances of type T fail to boot: <error>"
	case ReasonBudget:
		return p.Arg // "fleet at $4.98/h of $5.00/h"
	case ReasonCloudRefused:
		if p.Arg == "" {
			return "cloud refused creates"
		}
		return p.Arg // "cloud refused creates (not retried until T): <error>"
	case ReasonNoFit:
		return "no instance type fits: " + p.Arg
	case ReasonHeld:
		return "held"
	case ReasonPaused:
		return "scheduler paused"
	case ReasonPriorityZero:
		return "priority 0 (not scheduled)"
	case ReasonStartup:
		return "waiting for instances to be probed after start-up"
	case ReasonNoLabels:
		return p.Arg // "no instance type has labels k=v"
	case ReasonSupervisorLimit:
		return "supervisor limit (" + p.Arg + " of " + strconv.Itoa(p.N) + ")"
	case ReasonFreeing:
		return "at quota: freeing an instance for " + p.Arg + " (priority " + strconv.Itoa(p.N) + ")"
	case ReasonRequeued:
		if p.Arg == "" {
			return "waiting for its previous attempt to end"
		}
		return "waiting for previous attempt on " + p.Arg + " to end"
	}
	if p.Arg != "" {
		return p.Arg
	}
	return string(p.Code)
}
