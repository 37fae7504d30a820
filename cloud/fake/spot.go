// Spot interruptions of the fake driver's preemptible instances.

package fake

import (
	"dispatch-tui/cloud"
)

// Spot interruptions: the provider takes back an instance of a preemptible
// type. An interrupted instance stays listed, running its containers,
// with Interrupted reporting why (as a cloud announces a spot reclaim
// ahead of the termination), until it is destroyed or vanishes.

var _ cloud.Interruptible = (*instance)(nil)

// Interrupted implements cloud.Interruptible, as of the listing that
// returned this handle.
func (i *instance) Interrupted() (string, bool) {
	return i.interrupted, i.interrupted != ""
}

// Interrupt makes a live instance report a spot interruption with why
// from the next listing on. Any instance may be interrupted this way,
// whatever its type.
func (d *Driver) Interrupt(id cloud.InstanceID, why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.instances[id]; s != nil && s.live() && s.interrupted == "" {
		if why == "" {
			why = "spot capacity reclaimed"
		}
		s.interrupted = why
		d.stats.Interrupted++
	}
}

// maybeInterrupt interrupts s under SpotInterruptRate when its type is
// preemptible. d.mu is held.
func (d *Driver) maybeInterrupt(s *instState) {
	if !s.preemptible || s.interrupted != "" || d.faults.SpotInterruptRate <= 0 {
		return
	}
	if roll(d.rngSpot, d.faults.SpotInterruptRate) {
		s.interrupted = "spot capacity reclaimed"
		d.stats.Interrupted++
	}
}
