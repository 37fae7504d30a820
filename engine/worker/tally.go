// Counts of the pool's instances for the summary and the types, taken
// without copying every instance: every attached console reads the
// summary on every refresh.

package worker

import "maps"

// Tally is what the summary counts of the instance rows.
type Tally struct {
	// States counts the pool's instances and creates in flight by state,
	// and under StateRefused and StateForeign the hosts the driver
	// refuses and other dispatchers' instances (when there are any).
	States map[State]int
	// Behaviors counts the pool's instances and creates by idle
	// behaviour.
	Behaviors map[IdleBehavior]int
	// PricePerHour is what those not shutting down cost an hour.
	PricePerHour float64
}

// tallyCache is the count of the pool's instances and creates at a
// generation (generation.go): each attached console asks for the summary
// every second, and at 10,000 instances a count walks them all.
type tallyCache struct {
	ok    bool
	gen   uint64
	t     Tally
	walks uint64 // counts taken by walking the instances (tests)
}

// Tally counts the instance rows Instances, RefusedHosts and
// ForeignInstances list, without copying them; the pool's own instances
// are walked only when their generation moved since the last Tally.
func (p *Pool) Tally() Tally {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := &p.tally
	if !c.ok || c.gen != p.gen {
		c.ok, c.gen, c.walks = true, p.gen, c.walks+1
		c.t = Tally{States: map[State]int{}, Behaviors: map[IdleBehavior]int{}}
		add := func(st State, b IdleBehavior, price float64) {
			c.t.States[st]++
			c.t.Behaviors[b]++
			if st != StateShutdown {
				c.t.PricePerHour += price
			}
		}
		for _, w := range p.list {
			add(w.v.State, w.v.IdleBehavior, w.v.Price)
		}
		for _, pc := range p.pending {
			add(pc.view.State, pc.view.IdleBehavior, pc.view.Price)
		}
	}
	t := Tally{States: maps.Clone(c.t.States), Behaviors: maps.Clone(c.t.Behaviors), PricePerHour: c.t.PricePerHour}
	refused := 0
	for _, h := range p.refusedHosts {
		if _, held := p.byID[h.ID]; !held {
			refused++
		}
	}
	if refused > 0 {
		t.States[StateRefused] = refused
	}
	if n := len(p.foreign); n > 0 {
		t.States[StateForeign] = n
	}
	return t
}

// CountByType counts the pool's instances and creates in flight by type,
// then state, without copying them.
func (p *Pool) CountByType() map[string]map[State]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]map[State]int{}
	add := func(typ string, st State) {
		m := out[typ]
		if m == nil {
			m = map[State]int{}
			out[typ] = m
		}
		m[st]++
	}
	for _, w := range p.list {
		add(w.v.Type, w.v.State)
	}
	for _, pc := range p.pending {
		add(pc.view.Type, pc.view.State)
	}
	return out
}
