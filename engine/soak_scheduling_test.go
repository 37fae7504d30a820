package engine

import (
	"math/rand/v2"
	"slices"

	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// The chaos soak's part for docs/design.md §5's rules: labelled and supervisor
// containers in the workload, and a check at every step that no container
// waits at quota while a lower-priority one takes a free instance.

// soakSchedulingConfig labels the large type, so containers asking for
// the label can only go there; supervisor_fraction stays at its default.
func soakSchedulingConfig(cfg *config.Config) {
	for i := range cfg.InstanceTypes {
		if cfg.InstanceTypes[i].Name == "large" {
			cfg.InstanceTypes[i].Labels = map[string]string{"disk": "ssd"}
		}
	}
}

// soakSchedulingOpts marks about one container in 15 as asking for the
// large type's label, and one in 20 as a supervisor.
func soakSchedulingOpts(rng *rand.Rand) []specOpt {
	var opts []specOpt
	if rng.IntN(15) == 0 {
		opts = append(opts, labels("disk", "ssd"))
	}
	if rng.IntN(20) == 0 {
		opts = append(opts, supervisor)
	}
	return opts
}

// soakQuotaWatch checks, step by step, that no container waits at quota
// while a lower-priority one starts on an instance free of other work (an
// idle one, or a new one): that instance's quota was owed to the waiting
// container. Steps in which one of our instances is shutting down are not
// judged: such an instance pays the debt of a waiting container, and the
// idle ones beyond it may be used (engine/scheduler/quota.go).
//
// A container Locked to a booting instance created for it keeps it when it
// boots, though a higher one waits at quota meanwhile: the rule frees idle
// instances, not booting ones (their boot would be thrown away). Once it
// starts there the instance is busy, and lower-priority containers may
// fill the room beside it in the same step (TestBootedInstanceRoomFilledAtQuota).
type soakQuotaWatch struct {
	h        *harness
	running  map[string]string // Running containers before the step → instance
	booting  map[string]string // containers Locked to a booting instance before the step → it
	shutting bool              // an instance of ours was shutting down before the step
	checked  int               // steps judged
}

func (w *soakQuotaWatch) before() {
	w.running = runningRecords(w.h)
	w.booting = bootingRecords(w.h)
	w.shutting = anyShuttingDown(w.h)
}

// bootingRecords maps the containers Locked waiting for a named booting
// instance to it.
func bootingRecords(h *harness) map[string]string {
	m := map[string]string{}
	for _, v := range waitingViews(h) {
		if p := v.Pending; v.State == queue.Locked && p.Code == queue.ReasonBooting && p.Arg != "" {
			m[v.ID] = p.Arg
		}
	}
	return m
}

// waitingViews returns copies, with their pending reasons, of the
// containers not final.
func waitingViews(h *harness) []view.Container {
	var cs []*queue.Container
	h.eng.queue.Each(func(c *queue.Container) bool {
		if c.State.Final() {
			return false // the final ones come last
		}
		cs = append(cs, c)
		return true
	})
	return h.eng.queue.Views(cs)
}

// runningRecords maps the Running containers to their instance, as the
// scheduler sees them (a start in flight or lost counts: it holds room).
func runningRecords(h *harness) map[string]string {
	m := map[string]string{}
	h.eng.queue.Each(func(c *queue.Container) bool {
		if c.State == queue.Running {
			m[c.ID] = c.InstanceID
		}
		return !c.State.Final() // the final ones come last
	})
	return m
}

func anyShuttingDown(h *harness) bool {
	for _, v := range h.eng.Instances() {
		if v.State == worker.StateShutdown {
			return true
		}
	}
	return false
}

func (w *soakQuotaWatch) after(step int) {
	h := w.h
	if w.shutting || anyShuttingDown(h) {
		return
	}
	// The highest priority of a container left waiting at quota by this
	// step's pass (QUOTA: the head; POSITION: those behind it).
	top, topID := 0, ""
	for _, v := range waitingViews(h) {
		code := v.Pending.Code
		if (v.State == queue.Queued || v.State == queue.Locked) && (code == queue.ReasonQuota || code == queue.ReasonPosition) && v.Priority > top {
			top, topID = v.Priority, v.ID
		}
	}
	if top == 0 {
		return
	}
	w.checked++
	// New starts per instance; an instance also running a container from
	// before the step was not free.
	fresh := map[string][]string{}
	carried := map[string]bool{}
	for id, inst := range runningRecords(h) {
		if w.running[id] == inst {
			carried[inst] = true
		} else {
			fresh[inst] = append(fresh[inst], id)
		}
	}
	for inst, ids := range fresh {
		if carried[inst] || slices.ContainsFunc(ids, func(id string) bool { return w.booting[id] == inst }) {
			// Busy: with work from before the step, or with the
			// container it was booted for, which keeps it; filling
			// the room left beside that frees no quota.
			continue
		}
		hi := 0
		for _, id := range ids {
			hi = max(hi, h.container(id).Priority)
		}
		if hi < top {
			slices.Sort(ids)
			h.t.Fatalf("step %d: %v (priority %d) started on free instance %s while %s (priority %d) waited at quota%s",
				step, ids, hi, inst, topID, top, h.dumpContainers())
		}
	}
}

// report logs how many steps the watch judged, and fails a soak in which
// no container ever waited at quota with no instance shutting down: it
// would have checked nothing.
func (w *soakQuotaWatch) report() {
	w.h.t.Logf("quota watch: %d steps judged with a container waiting at quota", w.checked)
	if w.checked == 0 {
		w.h.t.Errorf("the soak never had a container waiting at quota to judge")
	}
}
