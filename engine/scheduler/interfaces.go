// What the scheduler needs from the worker pool.

package scheduler

import (
	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/worker"
)

// Pool is what the scheduler needs from the worker pool.
type Pool interface {
	Instances(buf []worker.InstanceView) []worker.InstanceView
	// Generation moves whenever what Instances returns changes, but for
	// the times every probe moves (worker.Pool.Generation).
	Generation() uint64
	Ready() bool
	// Listed reports whether a cloud listing has completed since start:
	// until then, an instance missing from Instances may only not be
	// listed yet, and its containers are not judged gone.
	Listed() bool
	Create(typeName string) error
	// CreateRefusal is the error Create would return now, without
	// creating anything; nil if it would create (Quiet asks it again
	// rather than running a pass at quota).
	CreateRefusal(typeName string) error
	StartContainer(id cloud.InstanceID, spec runner.Spec) error
	KillContainer(id cloud.InstanceID, containerID string) bool
	ForgetContainer(id cloud.InstanceID, containerID string)
	TakeStartFailures() []worker.StartFailure
	Shutdown(id cloud.InstanceID, reason string) bool
	Quota() (limit int, atQuota bool)
	// BootFailing returns the last boot error of a type whose instances
	// keep failing to boot, "" if they do not.
	BootFailing(typeName string) string
}
