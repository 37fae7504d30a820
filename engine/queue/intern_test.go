package queue

import (
	"fmt"
	"reflect"
	"testing"
)

// sameMap reports whether a and b are one map, not two equal ones.
func sameMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// TestRecordsShareRepeatedValues: containers submitted apart with the same
// labels, environment, constraints and command hold one copy of each, and
// so do the records a restart loads; the caller's spec and the views stay
// the caller's own.
func TestRecordsShareRepeatedValues(t *testing.T) {
	e := newEnv(t, nil)
	mk := func() Spec {
		s := spec("sh", "-c", "true")
		s.Name, s.Image = "job", "alpine:3"
		s.Labels = map[string]string{"team": "a", "pct": "7"}
		s.Env = map[string]string{"X": "1"}
		s.Scheduling.Constraints = map[string]string{"zone": "b"}
		return s
	}
	first := mk()
	a := e.submit(first)
	first.Labels["team"] = "changed after submit"
	b := e.submit(mk())
	other := mk()
	other.Labels["pct"] = "8"
	o := e.submit(other)

	check := func(when string) {
		t.Helper()
		e.q.mu.Lock()
		ra, rb, ro := e.q.byID.get(a.ID), e.q.byID.get(b.ID), e.q.byID.get(o.ID)
		e.q.mu.Unlock()
		for _, m := range []struct {
			name   string
			ma, mb map[string]string
		}{
			{"labels", ra.Labels, rb.Labels},
			{"env", ra.Env, rb.Env},
			{"constraints", ra.Scheduling.Constraints, rb.Scheduling.Constraints},
		} {
			if !sameMap(m.ma, m.mb) {
				t.Errorf("%s: the two records' %s are two maps, not one", when, m.name)
			}
		}
		if &ra.Command[0] != &rb.Command[0] {
			t.Errorf("%s: the two records' commands are two slices, not one", when)
		}
		if ra.Scheduling.Preemptible != rb.Scheduling.Preemptible {
			t.Errorf("%s: the two records' preemptible flags are two, not one", when)
		}
		if sameMap(ra.Labels, ro.Labels) {
			t.Errorf("%s: records with different labels share a map", when)
		}
		wantEqual(t, when+": labels of the first", ra.Labels, map[string]string{"team": "a", "pct": "7"})
		wantEqual(t, when+": labels of the other", ro.Labels, map[string]string{"team": "a", "pct": "8"})
		wantEqual(t, when+": environment of the other", ro.Env, map[string]string{"X": "1"})
	}
	check("after submit")

	va := e.get(a.ID)
	va.Labels["team"], va.Command[0] = "changed in a view", "changed"
	wantEqual(t, "the other record's view after a view was changed", e.get(b.ID).Labels["team"], "a")
	wantEqual(t, "the other record's command after a view was changed", e.get(b.ID).Command[0], "sh")

	e.reopen()
	check("after a restart")
}

// TestInternTablesAreBounded: values that never repeat (a name per
// container) do not grow the tables past internMax.
func TestInternTablesAreBounded(t *testing.T) {
	var in interner
	for i := range internMax + 10 {
		c := &Container{}
		c.Name = fmt.Sprintf("job-%d", i)
		c.Command = []string{fmt.Sprintf("run-%d", i)}
		c.Labels = map[string]string{"n": fmt.Sprint(i)}
		in.record(c)
		if c.Name != fmt.Sprintf("job-%d", i) || c.Labels["n"] != fmt.Sprint(i) || c.Command[0] != fmt.Sprintf("run-%d", i) {
			t.Fatalf("record %d interned as name %q, labels %v, command %v", i, c.Name, c.Labels, c.Command)
		}
	}
	if n := len(in.strs); n > internMax {
		t.Errorf("%d strings kept, more than %d", n, internMax)
	}
	if n := len(in.cmds); n > internMax {
		t.Errorf("%d commands kept, more than %d", n, internMax)
	}
	if n := len(in.maps); n > internMax {
		t.Errorf("%d maps kept, more than %d", n, internMax)
	}
}
