package ec2

import (
	"fmt"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/sshexec"
)

// Executor returns the runner.Executor for inst: SSH as the admin user
// with the dispatcher's key, to the address the latest listing shows (a
// public address appears after launch), checking the instance's secret
// before anything runs. Host keys of new cloud instances are not known in
// advance: the first one seen is pinned for the driver's lifetime, and the
// secret check is what proves the instance is the one created.
func (d *Driver) Executor(inst cloud.Instance) (runner.Executor, error) {
	secret := inst.Tags()[cloud.TagSecret]
	if secret == "" {
		return nil, fmt.Errorf("ec2 instance %s has no secret tag: not created by a dispatcher", inst.ID())
	}
	id := inst.ID()
	return sshexec.NewFirstContact(sshexec.FirstContactOptions{
		Kind: "ec2", ID: string(id), Secret: secret, User: d.opts.AdminUser, Signer: d.opts.Signer,
		Address: func() string { return d.address(id) },
	}), nil
}
