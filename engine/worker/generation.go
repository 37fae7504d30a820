// The pool's generation: a number that moves with every change of the
// instances as Instances shows them, but for the times every probe moves,
// so that a reader keeping a copy can tell that nothing changed without
// walking them all (docs/design.md §6).

package worker

// viewChanged notes a change of w's InstanceView, other than LastProbe,
// LastBusy and ListedAt (p.mu held). rowChanged calls it; the fields
// readers of changes do not see (Reported, ContainersLost, AskedAt,
// BootedAt) call it where they are written. A write that misses it is
// found by the pool's tests, which compare the instances at every settle
// (changes_check_test.go).
func (w *instance) viewChanged() { w.pool.gen++ }

// Generation is the instances' generation: while it stays the same, so do
// the views Instances returns, but for their LastProbe, LastBusy and
// ListedAt (ListedAt's being zero or not moves with Reported). At 10,000
// instances a copy of them all is a quiet step's largest cost; a reader
// that asks for the generation before its copy and again later knows
// whether the copy still holds.
func (p *Pool) Generation() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gen
}
