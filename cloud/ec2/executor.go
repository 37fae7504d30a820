// How the pool reaches an EC2 instance: SSH with the first host key pinned, secret checked.

package ec2

// Reaching an instance: SSH, the first host key pinned, the secret checked
// (docs/design.md §8).

import (
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
	return sshexec.ForCreated("ec2", inst, d.opts.AdminUser, d.opts.Signer, d.address)
}
