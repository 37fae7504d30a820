// Submit, and the operator verbs on containers and instances.

package engine

import (
	"errors"
	"fmt"
	"strings"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// NoFitError is returned by Submit and SubmitBatch when no configured type
// can hold a container.
type NoFitError struct {
	Why   string
	Types []string // each configured type with its size, for the message
}

// ErrorKind implements view.Kinded.
func (e *NoFitError) ErrorKind() view.Kind { return view.KindNoFit }

func (e *NoFitError) Error() string {
	if strings.HasPrefix(e.Why, "no instance type") {
		return e.Why + " (types: " + strings.Join(e.Types, ", ") + ")"
	}
	return "no instance type fits: " + e.Why + " (types: " + strings.Join(e.Types, ", ") + ")"
}

// checkFits returns a *NoFitError when no configured type has the labels
// asked for, is allowed by its scheduling.preemptible, and can hold the
// container; nil when one can.
func (e *Engine) checkFits(spec *queue.Spec) error {
	ok, why := e.sched.FitsSpec(spec.RuntimeConstraints, spec.Scheduling.Constraints, e.preemptible(spec))
	if ok {
		return nil
	}
	names := make([]string, len(e.cfg.InstanceTypes))
	for i, t := range e.cfg.InstanceTypes {
		names[i] = fmt.Sprintf("%s (%d vCPU, %s RAM, %s scratch, %d GPU", t.Name, t.VCPUs,
			view.FormatSize(t.RAM), view.FormatSize(t.Scratch), t.GPUs)
		if len(t.Labels) > 0 {
			names[i] += ", labels " + config.FormatLabels(t.Labels)
		}
		names[i] += ")"
	}
	return &NoFitError{Why: why, Types: names}
}

// preemptible is what spec's scheduling.preemptible is once submitted:
// its own value, else [containers] always_use_preemptible.
func (e *Engine) preemptible(spec *queue.Spec) bool {
	if p := spec.Scheduling.Preemptible; p != nil {
		return *p
	}
	return e.cfg.Containers.AlwaysUsePreemptible
}

// CheckSubmit returns what Submit would refuse spec for (an invalid spec,
// a *NoFitError), storing nothing; nil when it would be accepted.
func (e *Engine) CheckSubmit(spec queue.Spec) error {
	if err := queue.ValidateSpec(&spec); err != nil {
		return err
	}
	return e.checkFits(&spec)
}

// Submit validates and stores a new container. A container no configured
// type can hold is refused with *NoFitError and nothing is stored.
func (e *Engine) Submit(spec queue.Spec, actor string) (view.Container, error) {
	if err := queue.ValidateSpec(&spec); err != nil {
		return view.Container{}, err
	}
	if err := e.checkFits(&spec); err != nil {
		return view.Container{}, err
	}
	c, err := e.queue.Submit(spec, actor)
	if err == nil {
		e.notify()
	}
	return c, err
}

// SubmitBatch validates and stores several containers in one commit. If any
// spec is invalid or fits no configured type, nothing is stored and the
// error is a *BatchError naming every refused spec by index.
func (e *Engine) SubmitBatch(specs []queue.Spec, actor string) ([]view.Container, error) {
	var refused []ItemError
	for i := range specs {
		if err := e.CheckSubmit(specs[i]); err != nil {
			refused = append(refused, ItemError{Index: i, Err: err})
		}
	}
	if len(refused) > 0 {
		return nil, &BatchError{Items: refused}
	}
	cs, err := e.queue.SubmitBatch(specs, actor)
	if err == nil {
		e.notify()
	}
	return cs, err
}

// BatchError is SubmitBatch refusing some of its specs (none was stored).
// errors.As finds each item's error (a *queue.FieldError, a *NoFitError)
// through it.
type BatchError struct {
	Items []ItemError // in index order
}

func (e *BatchError) Error() string {
	msg := e.Items[0].Error()
	if len(e.Items) > 1 {
		msg += fmt.Sprintf(" (and %d more refused)", len(e.Items)-1)
	}
	return msg
}

func (e *BatchError) Unwrap() []error {
	errs := make([]error, len(e.Items))
	for i := range e.Items {
		errs[i] = &e.Items[i]
	}
	return errs
}

// ItemError is why the spec at Index of a batch was refused.
type ItemError struct {
	Index int
	Err   error
}

func (e *ItemError) Error() string { return fmt.Sprintf("container %d: %v", e.Index, e.Err) }

func (e *ItemError) Unwrap() error { return e.Err }

// ShuttingDownError is an instance verb refused because the instance is
// already shutting down (killed, drained, or timed out): nothing changes
// for it any more.
type ShuttingDownError struct{ ID string }

// ErrorKind implements view.Kinded: the instance's state forbids it.
func (e *ShuttingDownError) ErrorKind() view.Kind { return view.KindConflict }

func (e *ShuttingDownError) Error() string {
	return fmt.Sprintf("instance %s is shutting down: it takes no more verbs", e.ID)
}

// checkNotShuttingDown refuses a verb on an instance in state shutdown.
func (e *Engine) checkNotShuttingDown(id string) error {
	if v, ok := e.pool.Instance(cloud.InstanceID(id)); ok && v.State == worker.StateShutdown {
		return &ShuttingDownError{ID: id}
	}
	return nil
}

func (e *Engine) setBehavior(id, actor, reason string, b worker.IdleBehavior) (view.Instance, error) {
	if err := e.checkNotShuttingDown(id); err != nil {
		return view.Instance{}, err
	}
	v, err := e.pool.SetIdleBehavior(cloud.InstanceID(id), b)
	if err != nil {
		return view.Instance{}, instanceErr(id, err)
	}
	if err := e.queue.AddEvent(actor, "verb", id, string(b), reason); err != nil {
		e.log.Error("record event", "err", err)
	}
	e.notify()
	return instanceView(&v), nil
}

// HoldInstance stops new containers on an instance and exempts it from
// automatic shutdown.
func (e *Engine) HoldInstance(id, actor, reason string) (view.Instance, error) {
	return e.setBehavior(id, actor, reason, worker.IdleHold)
}

// DrainInstance stops new containers and shuts the instance down once idle.
func (e *Engine) DrainInstance(id, actor, reason string) (view.Instance, error) {
	return e.setBehavior(id, actor, reason, worker.IdleDrain)
}

// RunInstance returns an instance to normal.
func (e *Engine) RunInstance(id, actor, reason string) (view.Instance, error) {
	return e.setBehavior(id, actor, reason, worker.IdleRun)
}

// KillInstance destroys an instance now; its containers go back to the
// queue (an attempt counted) or end Cancelled at max_attempts.
func (e *Engine) KillInstance(id, actor, reason string) (view.Instance, error) {
	if reason == "" {
		reason = "killed by operator"
	}
	if err := e.checkNotShuttingDown(id); err != nil {
		return view.Instance{}, err
	}
	v, err := e.pool.KillInstance(cloud.InstanceID(id), reason)
	if err != nil {
		return view.Instance{}, instanceErr(id, err)
	}
	err = e.queue.Pass(func(tx *queue.Tx) {
		for _, c := range tx.RunningAtStart() {
			if c.State == queue.Running && c.InstanceID == id {
				if err := tx.Requeue(c, "instance "+id+" killed: "+reason); err != nil {
					e.log.Error("requeue", "container", c.ID, "err", err)
				}
			}
		}
	})
	if err2 := e.queue.AddEvent(actor, "verb", id, "kill", reason); err2 != nil {
		err = errors.Join(err, err2)
	}
	e.notify()
	return instanceView(&v), err
}

// ApplyInstanceVerb applies v to an instance: the one entry for callers
// that choose the verb at run time (the API, the TUI).
func (e *Engine) ApplyInstanceVerb(id string, v view.InstanceVerb, actor, reason string) (view.Instance, error) {
	switch v {
	case view.InstanceHold:
		return e.HoldInstance(id, actor, reason)
	case view.InstanceDrain:
		return e.DrainInstance(id, actor, reason)
	case view.InstanceRun:
		return e.RunInstance(id, actor, reason)
	case view.InstanceKill:
		return e.KillInstance(id, actor, reason)
	}
	return view.Instance{}, view.UnknownInstanceVerb(v.String())
}

// ApplyContainerVerb applies v to a container: the one entry for callers
// that choose the verb at run time (the API, the TUI).
func (e *Engine) ApplyContainerVerb(id string, v view.ContainerVerb, actor, reason string) (view.Container, error) {
	switch v {
	case view.ContainerHold:
		return e.HoldContainer(id, actor, reason)
	case view.ContainerRelease:
		return e.ReleaseContainer(id, actor, reason)
	case view.ContainerKill:
		return e.KillContainer(id, actor, reason)
	case view.ContainerPriority:
		return view.Container{}, &queue.FieldError{Field: "priority", Msg: "required with verb priority (SetPriority takes it)"}
	}
	return view.Container{}, view.UnknownContainerVerb(v.String())
}

// HoldContainer keeps a container from starting.
func (e *Engine) HoldContainer(id, actor, reason string) (view.Container, error) {
	c, err := e.queue.Hold(id, actor, reason)
	e.notify()
	return c, err
}

// ReleaseContainer makes a held container eligible again.
func (e *Engine) ReleaseContainer(id, actor, reason string) (view.Container, error) {
	c, err := e.queue.Release(id, actor, reason)
	e.notify()
	return c, err
}

// SetPriority changes a container's priority.
func (e *Engine) SetPriority(id string, priority int, actor, reason string) (view.Container, error) {
	c, err := e.queue.SetPriority(id, priority, actor, reason)
	e.notify()
	return c, err
}

// KillContainer cancels a queued container, or kills a running one (TERM,
// then KILL after kill_grace) and cancels it once it is dead.
func (e *Engine) KillContainer(id, actor, reason string) (view.Container, error) {
	c, err := e.queue.Kill(id, actor, reason)
	if err == nil && c.State == queue.Running && c.InstanceID != "" {
		e.pool.KillContainer(cloud.InstanceID(c.InstanceID), c.ID)
	}
	e.notify()
	return c, err
}

// Pause stops the scheduler starting containers and creating instances.
func (e *Engine) Pause(actor, reason string) error {
	err := e.queue.SetPaused(true, actor, reason)
	e.notify()
	return err
}

// Resume undoes Pause.
func (e *Engine) Resume(actor, reason string) error {
	err := e.queue.SetPaused(false, actor, reason)
	e.notify()
	return err
}

// instanceErr names the instance in a pool verb's error, unless the error
// already does (another dispatcher's instance).
func instanceErr(id string, err error) error {
	var fe *worker.ForeignError
	if errors.As(err, &fe) {
		return err
	}
	return fmt.Errorf("instance %s: %w", id, err)
}
