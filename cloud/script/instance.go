// One script-driven instance as the commands last reported it; set_tags and destroy.

package script

import (
	"context"
	"fmt"

	"dispatch-tui/cloud"
)

// Instance is one instance of the script driver.
type Instance struct {
	d *Driver
	cloud.Described[struct{}]
}

var _ cloud.Instance = (*Instance)(nil)

// update takes a listing's view of the instance; an address the listing
// leaves out keeps the one known.
func (i *Instance) update(l listLine, tags cloud.Tags, addr string) {
	tags = tags.Clone()
	i.Update(func(d *cloud.Description[struct{}]) {
		if l.ProviderType != "" {
			d.ProviderType = l.ProviderType
		} else if d.ProviderType == "" {
			d.ProviderType = tags[cloud.TagInstanceType]
		}
		if addr != "" {
			d.Address = addr
		}
		d.State = l.State
		d.Tags = tags
	})
}

// Interrupted reports an instance the list command says its provider took
// back (cloud.Interruptible).
func (i *Instance) Interrupted() (string, bool) {
	if i.State() != StatePreempted {
		return "", false
	}
	return "taken back by the provider (the list command reports it " + StatePreempted + ")", true
}

// SetTags runs the set_tags command with the instance's new tags; without
// one, the driver keeps them itself (until the dispatcher restarts).
func (i *Instance) SetTags(ctx context.Context, tags cloud.Tags) error {
	d := i.d
	if len(d.opts.SetTags) == 0 {
		d.mu.Lock()
		d.localTags[i.ID()] = tags.Clone()
		d.mu.Unlock()
	} else if _, err := d.run(ctx, VerbSetTags, "", instanceInput{ID: string(i.ID()), Tags: tags}); err != nil {
		return fmt.Errorf("set tags of %s: %w", i.ID(), err)
	}
	tags = tags.Clone()
	i.Update(func(d *cloud.Description[struct{}]) { d.Tags = tags })
	return nil
}

// Destroy runs the destroy command. The command must succeed for an
// instance that is already gone.
func (i *Instance) Destroy(ctx context.Context) error {
	d := i.d
	if _, err := d.run(ctx, VerbDestroy, "", instanceInput{ID: string(i.ID()), Tags: i.Tags()}); err != nil {
		return fmt.Errorf("destroy %s: %w", i.ID(), err)
	}
	d.forget(i.ID())
	d.log.Info("script driver: instance destroyed", "instance", string(i.ID()))
	return nil
}
