// How the pool reaches a script driver's instance: SSH, as on EC2.

package script

// Reaching an instance: SSH as on EC2 (docs/design.md §8).

import (
	"dispatch-tui/cloud"
	"dispatch-tui/engine/runner"
	"dispatch-tui/engine/sshexec"
)

// Executor returns the runner.Executor for inst: SSH as the admin user
// with the dispatcher's key, to the address the latest listing shows,
// checking the instance's secret before anything runs. The first host key
// seen is pinned for the driver's lifetime; the secret check (user_data
// wrote the secret) proves the instance is the one created.
func (d *Driver) Executor(inst cloud.Instance) (runner.Executor, error) {
	return sshexec.ForCreated("script", inst, d.opts.AdminUser, d.opts.Signer, d.addressOf)
}
