// One EC2 instance as the last listing described it, and its tag and destroy calls.

package ec2

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"dispatch-tui/cloud"
)

// Instance is one EC2 instance as last described.
type Instance struct {
	d *Driver
	// created is when this driver's Create made it (zero for one found
	// in a listing); set before the instance is shared.
	created time.Time

	cloud.Described[described]
}

// described is EC2's own part of an instance's description.
type described struct {
	stateReason string // EC2's StateReason.Code, e.g. "Server.SpotInstanceTermination"
	launchErr   error  // why EC2 ended it during its launch (LaunchFailed)
	spot        bool
	zone        string // its availability zone: its spot price is the zone's
}

var (
	_ cloud.Instance      = (*Instance)(nil)
	_ cloud.Interruptible = (*Instance)(nil)
	_ cloud.LaunchFailer  = (*Instance)(nil)
	_ cloud.NoticeReader  = (*Instance)(nil)
)

// set copies EC2's description of the instance.
func (i *Instance) set(li types.Instance) {
	tags := make(cloud.Tags, len(li.Tags))
	for _, t := range li.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	state, reason, message := "", "", ""
	if li.State != nil {
		state = string(li.State.Name)
	}
	if li.StateReason != nil {
		reason, message = aws.ToString(li.StateReason.Code), aws.ToString(li.StateReason.Message)
	}
	var launchErr error
	switch types.InstanceStateName(state) {
	case types.InstanceStateNameShuttingDown, types.InstanceStateNameTerminated:
		if launchFailureCodes[reason] {
			launchErr = launchError(i.ID(), string(li.InstanceType), reason, message)
		}
	}
	desc := cloud.Description[described]{
		ProviderType: string(li.InstanceType), Address: i.d.addressOf(li), State: state, Tags: tags,
		Extra: described{stateReason: reason, launchErr: launchErr, spot: li.InstanceLifecycle == types.InstanceLifecycleTypeSpot},
	}
	if li.Placement != nil {
		desc.Extra.zone = aws.ToString(li.Placement.AvailabilityZone)
	}
	i.Update(func(d *cloud.Description[described]) { *d = desc })
}

// update takes newer's description (from a later listing); an address
// or zone the later listing leaves out keeps the one known.
func (i *Instance) update(newer *Instance) {
	n := newer.Snapshot()
	i.Update(func(d *cloud.Description[described]) {
		if n.Address == "" {
			n.Address = d.Address
		}
		if n.Extra.zone == "" {
			n.Extra.zone = d.Extra.zone
		}
		*d = n
	})
}

// String is "id (type[ spot] @ address)", for logs.
func (i *Instance) String() string {
	d := i.Snapshot()
	spot := ""
	if d.Extra.spot {
		spot = " spot"
	}
	return fmt.Sprintf("%s (%s%s @ %s)", i.ID(), d.ProviderType, spot, d.Address)
}

// Interrupted reports a spot instance EC2 is taking back (cloud.Interruptible):
// shutting down or stopping for a spot termination, so that its containers
// are requeued without spending an attempt at once rather than when it
// leaves the listing. A terminated one is never asked: listings leave it
// out, and the pool takes a preemptible type's vanished instance as
// interrupted. The notice before all this is ParseNotice's (notice.go).
func (i *Instance) Interrupted() (string, bool) {
	d := i.Snapshot()
	if !d.Extra.spot || !strings.HasPrefix(d.Extra.stateReason, "Server.SpotInstanceTermination") {
		return "", false
	}
	switch types.InstanceStateName(d.State) {
	case types.InstanceStateNameShuttingDown, types.InstanceStateNameStopping, types.InstanceStateNameStopped:
		return "spot instance reclaimed by EC2 (" + d.Extra.stateReason + ")", true
	}
	return "", false
}

// LaunchFailed is why EC2 ended the instance during its launch, as the
// pool's error kinds (cloud.LaunchFailer); nil if it did not.
func (i *Instance) LaunchFailed() error { return i.Snapshot().Extra.launchErr }

// Spot reports whether the instance is a spot instance.
func (i *Instance) Spot() bool { return i.Snapshot().Extra.spot }

// SetTags replaces the dispatcher's tags on the instance: the new ones
// (with the configured extra tags) are written, and the dispatcher's own
// ("dispatch-tui-...") no longer wanted are deleted. Every other tag
// (an operator's, a tag policy's, AWS's "aws:...") is left alone.
func (i *Instance) SetTags(ctx context.Context, tags cloud.Tags) error {
	d := i.d
	want := d.allTags(tags)
	cur := i.Tags()
	if _, err := d.client.CreateTags(ctx, &ec2.CreateTagsInput{
		Resources: []string{string(i.ID())}, Tags: d.awsTags(tags),
	}, guarded); err != nil {
		return d.mapError("set tags of "+string(i.ID()), "", err)
	}
	var drop []types.Tag
	for k := range cur {
		if _, keep := want[k]; !keep && strings.HasPrefix(k, cloud.TagPrefix) {
			drop = append(drop, types.Tag{Key: aws.String(k)})
		}
	}
	sort.Slice(drop, func(a, b int) bool { return *drop[a].Key < *drop[b].Key })
	if len(drop) > 0 {
		if _, err := d.client.DeleteTags(ctx, &ec2.DeleteTagsInput{
			Resources: []string{string(i.ID())}, Tags: drop,
		}, guarded); err != nil {
			return d.mapError("delete tags of "+string(i.ID()), "", err)
		}
	}
	d.throttled(false)
	for k, v := range cur {
		if _, set := want[k]; !set && !strings.HasPrefix(k, cloud.TagPrefix) {
			want[k] = v // still there
		}
	}
	i.Update(func(d *cloud.Description[described]) { d.Tags = want })
	return nil
}

// Destroy terminates the instance. Terminating one already gone is not an
// error; but EC2 may not know an instance yet for a while after its launch
// (eventual consistency), so within ListGrace of its Create a NotFound
// proves nothing: the instance may be running, and the destroy fails, to
// be tried again.
func (i *Instance) Destroy(ctx context.Context) error {
	d := i.d
	out, err := d.client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{string(i.ID())}}, guarded)
	if err != nil && errorCode(err) == "InvalidInstanceID.NotFound" && !i.created.IsZero() {
		if age := d.opts.Now().Sub(i.created); age < d.opts.ListGrace {
			return fmt.Errorf("ec2 terminate %s: EC2 does not know the instance %s after its launch (its API is eventually consistent), so it may still run; the destroy is tried again: %w",
				i.ID(), age.Round(time.Second), err)
		}
	}
	if err != nil && errorCode(err) != "InvalidInstanceID.NotFound" {
		return d.mapError("terminate "+string(i.ID()), "", err)
	}
	d.throttled(false)
	d.forget(i.ID())
	// EC2 says shutting-down, or terminated for one already terminated;
	// NotFound here means gone.
	state := types.InstanceStateNameTerminated
	if err == nil {
		state = types.InstanceStateNameShuttingDown
		if len(out.TerminatingInstances) == 1 && out.TerminatingInstances[0].CurrentState != nil {
			state = out.TerminatingInstances[0].CurrentState.Name
		}
	}
	i.Update(func(d *cloud.Description[described]) { d.State = string(state) })
	d.log.Info("ec2: instance terminated", "instance", string(i.ID()))
	return nil
}
