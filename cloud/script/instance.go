// One script-driven instance as the commands last reported it; set_tags and destroy.

package script

// One instance as the commands last reported it; set_tags and destroy.

import (
	"context"
	"fmt"
	"sync"

	"dispatch-tui/cloud"
)

// Instance is one instance of the script driver.
type Instance struct {
	d  *Driver
	id cloud.InstanceID

	mu           sync.Mutex
	providerType string
	addr         string
	state        string
	tags         cloud.Tags
}

var _ cloud.Instance = (*Instance)(nil)

// update takes a listing's view of the instance; an address the listing
// leaves out keeps the one known.
func (i *Instance) update(l listLine, tags cloud.Tags, addr string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if l.ProviderType != "" {
		i.providerType = l.ProviderType
	} else if i.providerType == "" {
		i.providerType = tags[cloud.TagInstanceType]
	}
	if addr != "" {
		i.addr = addr
	}
	i.state = l.State
	i.tags = tags.Clone()
}

func (i *Instance) ID() cloud.InstanceID { return i.id }

func (i *Instance) String() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return fmt.Sprintf("%s (%s @ %s)", i.id, i.providerType, i.addr)
}

func (i *Instance) ProviderType() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.providerType
}

// Address is "host:port" of the instance's SSH server; "" until a
// command reported one.
func (i *Instance) Address() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.addr
}

// State is the state the list command last reported ("" = none given).
func (i *Instance) State() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.state
}

// Interrupted reports an instance the list command says its provider took
// back (cloud.Interruptible).
func (i *Instance) Interrupted() (string, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.state != StatePreempted {
		return "", false
	}
	return "taken back by the provider (the list command reports it " + StatePreempted + ")", true
}

func (i *Instance) Tags() cloud.Tags {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.tags.Clone()
}

// SetTags runs the set_tags command with the instance's new tags; without
// one, the driver keeps them itself (until the dispatcher restarts).
func (i *Instance) SetTags(ctx context.Context, tags cloud.Tags) error {
	d := i.d
	if len(d.opts.SetTags) == 0 {
		d.mu.Lock()
		d.localTags[i.id] = tags.Clone()
		d.mu.Unlock()
	} else if _, err := d.run(ctx, VerbSetTags, "", instanceInput{ID: string(i.id), Tags: tags}); err != nil {
		return fmt.Errorf("set tags of %s: %w", i.id, err)
	}
	i.mu.Lock()
	i.tags = tags.Clone()
	i.mu.Unlock()
	return nil
}

// Destroy runs the destroy command. The command must succeed for an
// instance that is already gone.
func (i *Instance) Destroy(ctx context.Context) error {
	d := i.d
	if _, err := d.run(ctx, VerbDestroy, "", instanceInput{ID: string(i.id), Tags: i.Tags()}); err != nil {
		return fmt.Errorf("destroy %s: %w", i.id, err)
	}
	d.forget(i.id)
	d.log.Info("script driver: instance destroyed", "instance", string(i.id))
	return nil
}
