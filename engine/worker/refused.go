// Hosts the driver refuses to use, shown as rows an operator must see.

package worker

import (
	"log/slog"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/view"
)

// StateRefused is shown for a host the driver refuses to use (a changed
// host key): not a state of the pool's state machine (states.txt), as such
// a host is not an instance the pool holds, only a row an operator must
// see, with the refusal as its LastError.
const StateRefused = view.InstanceRefused

// noteRefusedLocked records the hosts the driver refuses after a listing,
// with one event per host when its refusal starts.
func (p *Pool) noteRefusedLocked(now time.Time) {
	rr, ok := p.is.(cloud.RefusedReporter)
	if !ok {
		return
	}
	hosts := rr.Refused()
	seen := make(map[cloud.InstanceID]string, len(hosts))
	for _, h := range hosts {
		seen[h.ID] = h.Err
		if _, had := p.refused[h.ID]; !had {
			p.eventLocked(now, h.ID, EventProbeError, "host refused: "+h.Err, slog.LevelWarn)
		}
	}
	for id := range p.refused {
		if _, still := seen[id]; !still {
			p.eventLocked(now, id, EventProbeOK, "host accepted again", slog.LevelInfo)
		}
	}
	changed := len(hosts) != len(p.refusedHosts)
	for i := range hosts {
		if !changed && hosts[i] != p.refusedHosts[i] {
			changed = true
		}
	}
	p.refused = seen
	p.refusedHosts = hosts
	if changed {
		p.notifyLocked()
	}
}

// RefusedHosts returns a row for each host the driver refuses to use and
// the pool does not hold (one it holds shows its refusal as its own
// LastError), with State StateRefused.
func (p *Pool) RefusedHosts() []InstanceView {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refusedViewsLocked()
}

// refusedViewsLocked is RefusedHosts (p.mu held).
func (p *Pool) refusedViewsLocked() []InstanceView {
	var out []InstanceView
	for _, h := range p.refusedHosts {
		if _, held := p.byID[h.ID]; held {
			continue
		}
		v := InstanceView{Instance: view.Instance{ID: h.ID, Type: h.InstanceType, Address: h.Address, State: StateRefused, LastError: h.Err}}
		if it, ok := p.types[h.InstanceType]; ok {
			v.ProviderType = it.ProviderType
		}
		out = append(out, v)
	}
	return out
}
