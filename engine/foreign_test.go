package engine

import (
	"errors"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/clock"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// Two dispatchers on one cloud account: each shows the other's instances
// as display-only rows (state foreign, "owned by <id>"), keeps them out of
// the scheduler's view, and refuses verbs on them without touching them.
func TestForeignInstancesShownNotTouched(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	drv := fake.New(fake.Options{Clock: clk, BootDelay: 2 * time.Second})
	var engs []*Engine
	for range 2 {
		eng, err := New(Options{Config: testConfig(t), InstanceSet: drv, NewExecutor: drv.Executor, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close() })
		if _, err := eng.Submit(queue.Spec{
			Command:            fake.Cmd(time.Hour, 0),
			RuntimeConstraints: queue.Constraints{VCPUs: 1, RAM: gib / 2},
		}, "test"); err != nil {
			t.Fatal(err)
		}
		engs = append(engs, eng)
	}
	// own returns the one instance e holds, once it runs a container.
	own := func(e *Engine) (worker.InstanceView, bool) {
		vs := e.pool.Instances(nil)
		if len(vs) == 1 && vs[0].State == worker.StateRunning {
			return vs[0], true
		}
		return worker.InstanceView{}, false
	}
	foreignRow := func(e *Engine, id cloud.InstanceID) (view.Instance, bool) {
		for _, v := range e.Instances() {
			if v.ID == id {
				return v, true
			}
		}
		return view.Instance{}, false
	}
	var mine [2]worker.InstanceView
	for step := 0; ; step++ {
		if step > 120 {
			t.Fatalf("instances not running and seen by the other dispatcher after %d steps: %+v / %+v", step, engs[0].Instances(), engs[1].Instances())
		}
		for _, e := range engs {
			e.Step()
			e.Settle()
		}
		v0, ok0 := own(engs[0])
		v1, ok1 := own(engs[1])
		if ok0 && ok1 {
			_, seen0 := foreignRow(engs[1], v0.ID)
			_, seen1 := foreignRow(engs[0], v1.ID)
			if seen0 && seen1 {
				mine = [2]worker.InstanceView{v0, v1}
				break
			}
		}
		clk.Advance(time.Second)
	}

	for i, e := range engs {
		other := engs[1-i]
		theirs := mine[1-i]
		row, _ := foreignRow(e, theirs.ID)
		if want := "owned by " + other.ClusterID(); row.State != worker.StateForeign || row.LastError != want || row.Type != theirs.Type {
			t.Errorf("dispatcher %d shows %s as %+v, want state foreign, %q, type %s", i, theirs.ID, row, want, theirs.Type)
		}
		if got, ok := e.Instance(string(theirs.ID)); !ok || got.State != worker.StateForeign {
			t.Errorf("dispatcher %d: Instance(%s) = %+v, %v", i, theirs.ID, got, ok)
		}
		for _, v := range e.pool.Instances(nil) {
			if v.ID == theirs.ID {
				t.Errorf("dispatcher %d: the scheduler's view holds the other's instance %s", i, v.ID)
			}
		}
		if n := e.Summary().Instances[worker.StateForeign]; n != 1 {
			t.Errorf("dispatcher %d: summary counts %d foreign instances, want 1", i, n)
		}
	}

	// Verbs from dispatcher 0 on dispatcher 1's instance: refused, and
	// nothing changes, at the provider or for its owner.
	theirs := mine[1].ID
	verbs := map[string]func(id string) (view.Instance, error){
		"hold":  func(id string) (view.Instance, error) { return engs[0].HoldInstance(id, "test", "") },
		"drain": func(id string) (view.Instance, error) { return engs[0].DrainInstance(id, "test", "") },
		"kill":  func(id string) (view.Instance, error) { return engs[0].KillInstance(id, "test", "") },
	}
	want := "instance " + string(theirs) + " belongs to dispatcher " + engs[1].ClusterID() + "; not touched"
	for name, verb := range verbs {
		_, err := verb(string(theirs))
		var fe *worker.ForeignError
		if !errors.As(err, &fe) || err.Error() != want {
			t.Errorf("%s on a foreign instance: err %v, want %q", name, err, want)
		}
	}
	for range 5 {
		for _, e := range engs {
			e.Step()
			e.Settle()
		}
		clk.Advance(time.Second)
	}
	inst, ok := drv.Instance(theirs)
	if !ok {
		t.Fatalf("instance %s gone from the provider", theirs)
	}
	if tags := inst.Tags(); tags[cloud.TagOwner] != engs[1].ClusterID() || tags[cloud.TagIdleBehavior] != string(worker.IdleRun) {
		t.Errorf("instance %s tags changed: %v", theirs, tags)
	}
	if v, ok := engs[1].pool.Instance(theirs); !ok || v.State != worker.StateRunning || v.IdleBehavior != worker.IdleRun {
		t.Errorf("its owner sees %s as %+v, want running, idle behavior run", theirs, v)
	}
	if k := drv.Stats().Kills; k != 0 {
		t.Errorf("%d runner kills, want none", k)
	}
}
