package engine

import (
	"math/rand/v2"
	"strings"
	"testing"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
)

// The chaos soak's preemptible part: a cheap preemptible type, containers
// of which a third are preemptible, and spot interruptions on top of the
// vanishing instances (those of the preemptible type count as interrupted
// too).

// soakSpotInterruptRate is the chance, per listing (every 10 s), that a
// preemptible instance is interrupted.
const soakSpotInterruptRate = 0.04

// addSoakSpotType adds the preemptible type: the cheapest that holds the
// common container, so preemptible containers prefer it.
func addSoakSpotType(types []cloud.InstanceType) []cloud.InstanceType {
	return append([]cloud.InstanceType{{Name: "spot-small", ProviderType: "spot-small", VCPUs: 1, RAM: 2 * gib, Scratch: 10 * gib, Price: 0.4, Preemptible: true}}, types...)
}

// soakSpotSpec makes a third of the containers preemptible; the rest say
// false outright or leave it to always_use_preemptible (false).
func soakSpotSpec(rng *rand.Rand, spec *queue.Spec) {
	switch rng.IntN(3) {
	case 0:
		spec.Scheduling.Preemptible = new(true)
	case 1:
		spec.Scheduling.Preemptible = new(false)
	}
}

// spotInterrupter interrupts, once every 300 steps, one preemptible
// instance that holds containers: random interruptions mostly meet idle
// instances, and the soak must also see containers requeued by one, also
// in make test's shorter run. The interruption falls due every 300 steps
// and waits for a busy instance (a moment in a quiet gap finds none: one
// 1,000-container run met no requeue when it was tried at that moment only).
type spotInterrupter struct{ due bool }

func (s *spotInterrupter) step(h *harness, step int) {
	if step%300 == 0 {
		s.due = true
	}
	if !s.due {
		return
	}
	for _, v := range h.eng.Instances() {
		if v.Type == "spot-small" && len(v.Containers) > 0 && v.State != worker.StateShutdown {
			h.cloud.Interrupt(cloud.InstanceID(v.ID), "soak: spot capacity reclaimed")
			s.due = false
			return
		}
	}
}

// checkSoakSpotPlacement fails when a container that is not preemptible
// runs on a preemptible instance.
func checkSoakSpotPlacement(t *testing.T, h *harness, step int) {
	for _, v := range h.eng.Instances() {
		if v.Type != "spot-small" {
			continue
		}
		for _, id := range v.Containers {
			if c, ok := h.eng.Container(id); ok && !c.Scheduling.IsPreemptible() {
				t.Fatalf("step %d: container %s (not preemptible) is on preemptible instance %s", step, id, v.ID)
			}
		}
	}
}

// soakPreemptions counts, per container, the requeues a spot interruption
// caused: runs that spent no attempt.
func soakPreemptions(h *harness) map[string]int {
	evs, _ := h.eng.Events(0, 1<<30)
	out := map[string]int{}
	for _, e := range evs {
		if e.Kind == "state" && e.Action == string(queue.Queued) && strings.Contains(e.Reason, "was interrupted (spot)") {
			out[e.Target]++
		}
	}
	return out
}

// isSpotShutdown reports whether a shutdown event is the provider's spot
// interruption, not a shutdown the pool chose (which a hold forbids).
func isSpotShutdown(reason string) bool {
	return strings.HasPrefix(reason, "shutdown: spot interruption")
}
