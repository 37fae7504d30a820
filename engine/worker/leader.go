// Acting only while leading (docs/design.md §11): the pool's cloud
// mutations and runner starts and kills ask the lease first, and a runner
// refusing the pool's epoch is reported.

package worker

import (
	"errors"

	"dispatch-tui/engine/runner"
)

// ErrNotLeading is what a cloud create, destroy or tag write, or a runner
// start or kill, fails with when this node's lease may have run out by its
// own clock: it was not sent.
var ErrNotLeading = errors.New("not sent: this node's lease as leader may have run out on its own clock, so it stands by; the leader acts")

// mayAct is nil when the pool may act now, else ErrNotLeading. Read right
// before each call it guards, not when the call was decided.
func (p *Pool) mayAct() error {
	if p.opts.MayAct == nil || p.opts.MayAct() {
		return nil
	}
	return ErrNotLeading
}

// noteFenced tells Options.OnFenced of a runner's refusal of the pool's
// epoch: a newer leader has called that runner.
func (p *Pool) noteFenced(err error) {
	if err != nil && p.opts.OnFenced != nil && runner.IsFenced(err) {
		p.opts.OnFenced(err)
	}
}
