// The deadlines of runner calls: the one reading of cloud.timeout_runner_call.

package worker

import (
	"context"
	"time"

	"dispatch-tui/engine/config"
)

// minSlowCallTimeout is the least a call that may install or start the
// runner or containers gets: cut short and retried from scratch, a slow
// first start on a loaded instance might never finish.
const minSlowCallTimeout = time.Minute

// CallTimeouts are the deadlines of the calls made on an instance
// (docs/design.md §6, Deadlines).
type CallTimeouts struct {
	// Ready bounds each call of a ready instance's probe.
	Ready time.Duration
	// Slow bounds the calls that may install or start the runner or
	// containers: the probes of booting and newly found instances, and
	// start, kill, forget and logs calls.
	Slow time.Duration
}

// CallTimeoutsOf reads the deadlines from a validated config; the pool and
// the operator's driver check (engine/cloudcheck) both take them from here.
func CallTimeoutsOf(cl *config.Cloud) CallTimeouts {
	return CallTimeouts{Ready: cl.TimeoutRunnerCall, Slow: max(cl.TimeoutRunnerCall, minSlowCallTimeout)}
}

// clockBoundKey marks a context whose deadline the pool keeps on its own
// clock (a probe's call, which Step cuts): withCallDeadline then adds no
// deadline in real time, so the call has one deadline, not two.
type clockBoundKey struct{}

func clockBound(ctx context.Context) context.Context {
	return context.WithValue(ctx, clockBoundKey{}, true)
}

func isClockBound(ctx context.Context) bool {
	return ctx.Value(clockBoundKey{}) != nil
}
