// Counts of the pool's instances for the summary and the types, taken
// without copying every instance: every attached console reads the
// summary on every refresh.

package worker

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

// Tally counts the instance rows Instances, RefusedHosts and
// ForeignInstances list, without copying them.
func (p *Pool) Tally() Tally {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := Tally{States: map[State]int{}, Behaviors: map[IdleBehavior]int{}}
	add := func(st State, b IdleBehavior, price float64) {
		t.States[st]++
		t.Behaviors[b]++
		if st != StateShutdown {
			t.PricePerHour += price
		}
	}
	for _, w := range p.list {
		add(w.v.State, w.v.IdleBehavior, w.v.Price)
	}
	for _, pc := range p.pending {
		add(pc.view.State, pc.view.IdleBehavior, pc.view.Price)
	}
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
