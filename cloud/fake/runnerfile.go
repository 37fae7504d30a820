// Faults of the runner binary as a file on an instance: deleted (as a temp
// cleaner deletes one under /tmp) and installs that fail.

package fake

import "dispatch-tui/cloud"

// DeleteRunner deletes the runner binary on the instance: every runner
// command line exits 127 with the shell's "not found", as with a real
// shell, until the next successful install. The runner's state (its
// containers, which keep running) is untouched.
func (d *Driver) DeleteRunner(id cloud.InstanceID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.instances[id]; s != nil {
		s.runnerGone = true
		clear(s.installed)
	}
}

// FailInstalls makes the runner installs on the instance exit 1 with msg
// on stderr (as a full disk would); "" lets them succeed again.
func (d *Driver) FailInstalls(id cloud.InstanceID, msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.instances[id]; s != nil {
		s.installFails = msg
	}
}

// runnerNotFound is what sh answers for a runner path that does not exist.
func runnerNotFound(path string) ([]byte, []byte, error) {
	return exitErr(127, "sh: 1: %s: not found", path)
}
