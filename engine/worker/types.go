// The pool's small public types: idle behaviours, create errors, start failures.

package worker

import (
	"errors"
	"fmt"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/view"
)

// IdleBehavior is what the pool does with an instance when it is idle.
type IdleBehavior = view.IdleBehavior

// Idle behaviours (docs/design.md §4).
const (
	IdleRun   = view.IdleRun
	IdleHold  = view.IdleHold
	IdleDrain = view.IdleDrain
)

// ValidIdleBehavior reports whether b is one of run, hold, drain.
func ValidIdleBehavior(b IdleBehavior) bool {
	return b == IdleRun || b == IdleHold || b == IdleDrain
}

// Errors returned by Pool.Create without making a cloud call.
var (
	// ErrAtQuota: max_instances or the provider quota estimate is reached.
	ErrAtQuota = errors.New("at quota")
	// ErrThrottled: max_concurrent_creates, the cloud-op rate limit or a
	// provider rate-limit pause prevents a create now; try on a later pass.
	ErrThrottled = errors.New("create throttled")
	// ErrNotFound: no instance with that id in the pool.
	ErrNotFound = view.NewError(view.KindNotFound, "instance not found")
	// ErrNotReady: the instance cannot take a container now (not idle or
	// running, or its idle behaviour is not run).
	ErrNotReady = errors.New("instance not ready")
	// ErrEarlierAttempt: the instance's runner still holds an earlier
	// attempt of the container (exited, its forget not done): it would
	// refuse the start, or a late read of the old record would pass for
	// the new attempt's. Nothing is sent; a later pass starts it.
	ErrEarlierAttempt = errors.New("its runner still holds an earlier attempt of this container")
)

// CapacityBlockedError: the type (or the whole provider, Type "") is in a
// capacity back-off after a capacity error until Until.
type CapacityBlockedError struct {
	Type  string
	Until time.Time
}

func (e *CapacityBlockedError) Error() string {
	if e.Type == "" {
		return fmt.Sprintf("provider out of capacity until %s", e.Until.Format(time.TimeOnly))
	}
	return fmt.Sprintf("no capacity for %s until %s", e.Type, e.Until.Format(time.TimeOnly))
}

// CreateRefusedError: the cloud refused a create for a reason retrying
// will not fix (cloud.PermanentError, such as missing permissions); no
// create is tried before Until.
type CreateRefusedError struct {
	Until time.Time
	Err   string
}

func (e *CreateRefusedError) Error() string {
	return fmt.Sprintf("cloud refused creates (not retried until %s): %s", e.Until.Format(time.TimeOnly), e.Err)
}

// StartFailure reports a container start that failed on an instance.
type StartFailure struct {
	ContainerID string
	InstanceID  cloud.InstanceID
	Err         error
	// NeverSent: the request never reached the instance's runner (no
	// connection, or the runner could not be run: exit 126/127), so the
	// container did not run and the start is not an attempt.
	NeverSent bool
}
