// What a check leaves behind: waiting for its instance to go, cleanup after a failure.

package cloudcheck

// What a check leaves behind: waiting for destroyed instances to go, and
// the cleanup after a failed or interrupted check.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"dispatch-tui/cloud"
)

// waitGone polls until no listing of the check's instances shows ids.
func (c *check) waitGone(ctx context.Context, ids []cloud.InstanceID) error {
	return c.poll(ctx, func(ctx context.Context) (bool, error) {
		insts, err := c.drv.Set.Instances(ctx, c.runFilter())
		if err != nil {
			return false, fmt.Errorf("list instances: %w", err)
		}
		for _, inst := range insts {
			if slices.Contains(ids, inst.ID()) {
				return false, fmt.Errorf("%s is still listed", inst.ID())
			}
		}
		return true, nil
	})
}

// cleanup destroys, after a failure, the instance created and anything
// else tagged with the run id (a create cut short may have made one the
// check holds no handle for), and waits until no listing shows them. It
// has its own time: it runs after an interrupt or the overall timeout.
func (c *check) cleanup(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Steps.Cleanup)
	defer cancel()
	t0 := time.Now()
	var targets []cloud.Instance
	var ids []cloud.InstanceID
	add := func(inst cloud.Instance) {
		if !slices.Contains(ids, inst.ID()) {
			targets = append(targets, inst)
			ids = append(ids, inst.ID())
		}
	}
	if c.inst != nil {
		add(c.inst)
	}
	insts, listErr := c.drv.Set.Instances(ctx, c.runFilter())
	for _, inst := range insts {
		add(inst)
		c.seen = append(c.seen, inst.ID())
	}
	if len(targets) == 0 {
		if listErr != nil {
			c.line(StepCleanup, "FAIL", time.Since(t0), fmt.Sprintf("list instances: %v; look for instances tagged %s=%s at the provider and destroy them", listErr, TagRun, c.runID))
			return
		}
		c.line(StepCleanup, "ok", time.Since(t0), "nothing was created")
		return
	}
	var destroyErrs []string
	for _, inst := range targets {
		// Retry: a destroy may be throttled, or fail for a while. One
		// that fails on an instance a listing showed before and no longer
		// shows (a destroy that got through before the interrupt) is
		// done; one never listed may just not be listed yet.
		if err := c.poll(ctx, func(ctx context.Context) (bool, error) {
			err := inst.Destroy(ctx)
			if err != nil && slices.Contains(c.seen, inst.ID()) {
				if cur, lerr := c.find(ctx, inst.ID()); lerr == nil && cur == nil {
					return true, nil
				}
			}
			return err == nil, err
		}); err != nil {
			destroyErrs = append(destroyErrs, fmt.Sprintf("destroy %s: %v", inst.ID(), err))
		}
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = string(id)
	}
	if err := c.waitGone(ctx, ids); err != nil {
		if len(destroyErrs) > 0 {
			err = errors.New(strings.Join(destroyErrs, "; "))
		}
		c.line(StepCleanup, "FAIL", time.Since(t0), fmt.Sprintf("could not destroy %s: %v; destroy it by hand at the provider (tagged %s=%s)",
			strings.Join(names, ", "), err, TagRun, c.runID))
		return
	}
	c.line(StepCleanup, "ok", time.Since(t0), fmt.Sprintf("destroyed %s; nothing left", strings.Join(names, ", ")))
}
