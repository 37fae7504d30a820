package worker

// The pool's tests check the change log against the pool's rows at every
// settle: the log is kept by marks at the writes (rowChanged), and a write
// that does not mark its row leaves an attached console showing an old
// row, which this check turns into a failing test.

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/view"
)

// checkChangesAtSettle starts p's change log and fails tb at any settle
// after which the log does not show what p's rows show (call before p's
// first Step).
func checkChangesAtSettle(tb testing.TB, p *Pool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.startChangesLocked()
	failed, genFailed := false, false // once a test: every later settle would say it again
	var seen []InstanceView
	seenGen := p.gen
	p.changes.onSettle = func() {
		if diff := p.changesBehindLocked(); diff != "" && !failed {
			failed = true
			tb.Errorf("the change log is behind the pool after a settle (a write that does not call rowChanged?):%s", diff)
		}
		now := p.instancesLocked(nil)
		if p.gen == seenGen && !genFailed {
			if diff := viewsDiffer(seen, now); diff != "" {
				genFailed = true
				tb.Errorf("the instances changed and the pool's generation did not (a write that does not call viewChanged?):%s", diff)
			}
		}
		seen, seenGen = now, p.gen
	}
}

// viewsDiffer says how a and b differ ("" when they do not) but for the
// times every probe moves, which the generation leaves out.
func viewsDiffer(a, b []InstanceView) string {
	if len(a) != len(b) {
		return fmt.Sprintf("\n  %d instances, then %d", len(a), len(b))
	}
	var out strings.Builder
	for i := range a {
		x, y := a[i], b[i]
		for _, v := range []*InstanceView{&x, &y} {
			v.LastProbe, v.LastBusy = time.Time{}, time.Time{}
			if !v.ListedAt.IsZero() {
				v.ListedAt = time.Unix(1, 0)
			}
		}
		if !reflect.DeepEqual(x, y) {
			fmt.Fprintf(&out, "\n  %s: %+v\n    then %+v", x.ID, x, y)
		}
	}
	return out.String()
}

// changesBehindLocked says how the log's rows differ from the pool's
// ("" when they do not), comparing every row as readers see it.
func (p *Pool) changesBehindLocked() string {
	cl := &p.changes
	want := map[view.InstanceID]view.Instance{}
	for _, w := range p.list {
		if !w.removed {
			want[w.v.ID] = w.v.Instance
		}
	}
	var others []InstanceView
	others = append(others, p.refusedViewsLocked()...)
	others = append(others, p.foreignViewsLocked()...)
	for _, v := range others {
		if _, ok := want[v.ID]; !ok {
			want[v.ID] = v.Instance
		}
	}
	var b strings.Builder
	for id, v := range want {
		r, ok := cl.rows[id]
		switch {
		case !ok:
			fmt.Fprintf(&b, "\n  %s: not in the log; the pool shows %+v", id, v)
		case !sameInstance(&r.v, &v):
			fmt.Fprintf(&b, "\n  %s: the log shows %+v\n    the pool shows %+v", id, r.v, v)
		}
	}
	for id, r := range cl.rows {
		if _, ok := want[id]; !ok {
			fmt.Fprintf(&b, "\n  %s: in the log (%+v), gone from the pool", id, r.v)
		}
	}
	if !slices.EqualFunc(cl.creating, p.pending, func(a view.Instance, b *pendingCreate) bool { return sameInstance(&a, &b.view.Instance) }) {
		fmt.Fprintf(&b, "\n  creates in flight: the log shows %d, the pool %d", len(cl.creating), len(p.pending))
	}
	return b.String()
}
