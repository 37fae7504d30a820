package worker

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/view"
)

// instCopy is a reader's copy of the instance rows, kept by changes.
type instCopy struct {
	gen      uint64
	rows     map[view.InstanceID]view.Instance
	creating []view.Instance
	reads    int // pages read
}

// follow reads every page of changes since the copy's generation (limit a
// page) and applies them.
func (c *instCopy) follow(t *testing.T, p *Pool, limit int) Changes {
	t.Helper()
	if c.rows == nil {
		c.rows = map[view.InstanceID]view.Instance{}
	}
	var all Changes
	for {
		ch, err := p.ChangesSince(c.gen, limit)
		if err != nil {
			t.Fatalf("changes since %d: %v", c.gen, err)
		}
		c.reads++
		for _, id := range ch.Removed {
			if id == CreatingID {
				c.creating = nil
				continue
			}
			delete(c.rows, view.InstanceID(id))
		}
		for _, v := range ch.Items {
			if v.ID == "" {
				c.creating = append(c.creating, v)
				continue
			}
			c.rows[v.ID] = v
		}
		if ch.Generation <= c.gen && c.gen != 0 && len(ch.Items)+len(ch.Removed) > 0 {
			t.Fatalf("a page with changes did not move the generation: %d -> %d", c.gen, ch.Generation)
		}
		c.gen = ch.Generation
		all.Items = append(all.Items, ch.Items...)
		all.Removed = append(all.Removed, ch.Removed...)
		all.Generation = ch.Generation
		if !ch.More {
			return all
		}
	}
}

// matches fails unless the copy shows what the pool's lists show (but for
// the times every probe moves, which sameInstance leaves out).
func (c *instCopy) matches(t *testing.T, p *Pool) {
	t.Helper()
	var want []InstanceView
	want = append(want, p.Instances(nil)...)
	want = append(want, p.RefusedHosts()...)
	want = append(want, p.ForeignInstances()...)
	var creating []view.Instance
	n := 0
	for i := range want {
		v := &want[i].Instance
		if v.ID == "" {
			creating = append(creating, *v)
			continue
		}
		n++
		got, ok := c.rows[v.ID]
		if !ok || !sameInstance(&got, v) {
			t.Fatalf("instance %s: the copy has %+v (present %v), the pool %+v", v.ID, got, ok, *v)
		}
	}
	if n != len(c.rows) {
		t.Fatalf("the copy has %d instances, the pool %d: %+v", len(c.rows), n, c.rows)
	}
	if !slices.EqualFunc(c.creating, creating, func(a, b view.Instance) bool { return sameInstance(&a, &b) }) {
		t.Fatalf("creates in flight: the copy has %+v, the pool %+v", c.creating, creating)
	}
}

// noIdleTimeout keeps idle instances for the length of a test.
func noIdleTimeout(c *config.Config) { c.Cloud.TimeoutIdle = time.Hour }

// A reader that reads every instance once and then only the changes keeps
// the pool's rows through creates, verbs and destroys; probes alone change
// nothing; a generation the pool does not know is ErrReload.
func TestChangesFollowThePool(t *testing.T) {
	h := newHarness(t, hopt{cfg: noIdleTimeout})
	h.step()
	a := h.createIdle("small")
	b := h.createIdle("large")
	var c instCopy
	first := c.follow(t, h.pool, 1)
	if len(first.Items) != 2 || c.reads != 2 {
		t.Fatalf("first read: %d items in %d pages of 1, want 2 in 2", len(first.Items), c.reads)
	}
	c.matches(t, h.pool)

	// Probes move LastProbe on every instance: not a change.
	before, _ := h.pool.Instance(a)
	h.run(30 * time.Second)
	after, _ := h.pool.Instance(a)
	if !after.LastProbe.After(before.LastProbe) {
		t.Fatalf("no probe in 30 s (last probe %s then %s): the check below would prove nothing", before.LastProbe, after.LastProbe)
	}
	if ch := c.follow(t, h.pool, 0); len(ch.Items) != 0 || len(ch.Removed) != 0 {
		t.Fatalf("a quiet pool (probes only) changed: %+v", ch)
	}

	// A create in flight is a row with no id, sent whole with "" removed.
	gate := make(chan struct{})
	h.set.gate = gate
	if err := h.pool.Create("small"); err != nil {
		t.Fatal(err)
	}
	ch := c.follow(t, h.pool, 0)
	if len(ch.Items) != 1 || ch.Items[0].ID != "" || !slices.Equal(ch.Removed, []string{CreatingID}) {
		t.Fatalf("a create in flight: %+v", ch)
	}
	c.matches(t, h.pool)
	gate <- struct{}{}
	h.pool.Wait()
	h.set.gate = nil
	ch = c.follow(t, h.pool, 0)
	if len(ch.Items) != 1 || ch.Items[0].ID == "" || !slices.Contains(ch.Removed, CreatingID) {
		t.Fatalf("the create done: %+v", ch)
	}
	c.matches(t, h.pool)
	created := ch.Items[0].ID

	// A verb is one change; the others are not sent again.
	if _, err := h.pool.SetIdleBehavior(b, IdleHold); err != nil {
		t.Fatal(err)
	}
	ch = c.follow(t, h.pool, 0)
	if len(ch.Items) != 1 || ch.Items[0].ID != b || ch.Items[0].IdleBehavior != IdleHold {
		t.Fatalf("hold %s: %+v", b, ch)
	}
	c.matches(t, h.pool)

	// Killed, destroyed and gone: removed.
	if _, err := h.pool.KillInstance(a, "test"); err != nil {
		t.Fatal(err)
	}
	h.until(string(a)+" gone", 5*time.Minute, func() bool { _, ok := h.pool.Instance(a); return !ok })
	h.until(string(created)+" idle", 5*time.Minute, func() bool { return h.state(created) == StateIdle })
	ch = c.follow(t, h.pool, 1)
	if !slices.Contains(ch.Removed, string(a)) {
		t.Fatalf("%s destroyed, not in removed: %+v", a, ch)
	}
	c.matches(t, h.pool)

	_, err := h.pool.ChangesSince(c.gen+1000, 0)
	if view.KindOf(err) != view.KindGone || !strings.Contains(err.Error(), "changed_since=0") {
		t.Fatalf("changes since a generation not reached yet: %v; want ErrReload", err)
	}
	h.pool.mu.Lock()
	floor := h.pool.changes.floor
	h.pool.mu.Unlock()
	_, err = h.pool.ChangesSince(floor-1, 0)
	if !errors.Is(err, ErrReload) {
		t.Fatalf("changes since before the log started: %v; want ErrReload", err)
	}
}

// A reader waiting for changes waits while the pool is quiet, returns
// when a step finds a change, and returns when its context ends or the
// pool stops.
func TestChangesWait(t *testing.T) {
	h := newHarness(t, hopt{cfg: noIdleTimeout})
	h.step()
	id := h.createIdle("small")
	ch, err := h.pool.ChangesSince(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	waiting := func() int {
		h.pool.mu.Lock()
		defer h.pool.mu.Unlock()
		return h.pool.changes.waiters
	}
	startWait := func(ctx context.Context) chan bool {
		done := make(chan bool, 1)
		since := ch.Latest
		go func() { done <- h.pool.WaitChanges(ctx, since) }()
		wait.Until(t, "WaitChanges waiting", 20*time.Second, func() bool { return waiting() == 1 })
		return done
	}
	got := func(done chan bool, want bool, what string) {
		t.Helper()
		var ok bool
		wait.Until(t, "WaitChanges to return "+what, 20*time.Second, func() bool {
			select {
			case ok = <-done:
				return true
			default:
				return false
			}
		})
		if ok != want {
			t.Fatalf("%s: WaitChanges returned %v, want %v", what, ok, want)
		}
	}

	quiet := func(what string) {
		t.Helper()
		h.pool.mu.Lock()
		still := h.pool.changes.waiters == 1 && h.pool.changes.wake != nil
		h.pool.mu.Unlock()
		if !still {
			t.Fatalf("WaitChanges woken %s", what)
		}
	}
	done := startWait(t.Context())
	h.run(20 * time.Second)
	quiet("by the steps of a quiet pool (probes only)")
	// A change the pool makes on its own is found by its next step.
	if err := h.pool.Create("small"); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	quiet("before a step")
	h.step()
	got(done, true, "at the step after a create")

	// An operator's verb wakes a waiting reader at once, without a step.
	ch, _ = h.pool.ChangesSince(ch.Latest, 0)
	done = startWait(t.Context())
	if _, err := h.pool.SetIdleBehavior(id, IdleDrain); err != nil {
		t.Fatal(err)
	}
	got(done, true, "after a drain, with no step")

	ctx, cancel := context.WithCancel(t.Context())
	ch, _ = h.pool.ChangesSince(ch.Latest, 0)
	done = startWait(ctx)
	cancel()
	got(done, false, "its context cancelled")

	ch, _ = h.pool.ChangesSince(ch.Latest, 0)
	done = startWait(t.Context())
	h.pool.Stop()
	got(done, false, "the pool stopped")
}

// sameInstance compares every field of view.Instance but the two probe
// times: a field added later and forgotten there would never be sent to
// an attached console.
func TestSameInstanceComparesEveryField(t *testing.T) {
	base := view.Instance{ID: "i", Containers: []string{"c"}}
	skipped := map[string]bool{"LastProbe": true, "LastBusy": true}
	rt := reflect.TypeOf(base)
	for i := range rt.NumField() {
		f := rt.Field(i)
		other := base
		other.Containers = slices.Clone(base.Containers)
		fv := reflect.ValueOf(&other).Elem().Field(i)
		switch fv.Kind() {
		case reflect.String:
			fv.SetString(fv.String() + "x")
		case reflect.Bool:
			fv.SetBool(!fv.Bool())
		case reflect.Float64:
			fv.SetFloat(fv.Float() + 1)
		case reflect.Slice:
			fv.Set(reflect.ValueOf([]string{"d"}))
		case reflect.Struct:
			if f.Type != reflect.TypeOf(time.Time{}) {
				t.Fatalf("field %s of type %s: teach this test (and sameInstance) about it", f.Name, f.Type)
			}
			fv.Set(reflect.ValueOf(time.Unix(1, 0)))
		default:
			t.Fatalf("field %s of kind %s: teach this test (and sameInstance) about it", f.Name, fv.Kind())
		}
		if same := sameInstance(&base, &other); same != skipped[f.Name] {
			t.Errorf("field %s changed: sameInstance = %v", f.Name, same)
		}
	}
}

// The instances of another dispatcher are rows too, and go when they are
// no longer listed.
func TestChangesForeignRows(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	var c instCopy
	c.follow(t, h.pool, 0)
	other, err := h.drv.Create(context.Background(), cloud.InstanceType{Name: "small", ProviderType: "s1"},
		cloud.Tags{cloud.TagOwner: "elsewhere", cloud.TagInstanceType: "small"})
	if err != nil {
		t.Fatal(err)
	}
	h.until("listed", 5*time.Minute, func() bool { return len(h.pool.ForeignInstances()) == 1 })
	ch := c.follow(t, h.pool, 0)
	if len(ch.Items) != 1 || ch.Items[0].ID != other.ID() || ch.Items[0].State != StateForeign {
		t.Fatalf("another dispatcher's instance: %+v", ch)
	}
	c.matches(t, h.pool)
	if err := other.Destroy(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.until("no longer listed", 5*time.Minute, func() bool { return len(h.pool.ForeignInstances()) == 0 })
	ch = c.follow(t, h.pool, 0)
	if !slices.Equal(ch.Removed, []string{string(other.ID())}) {
		t.Fatalf("another dispatcher's instance destroyed: %+v", ch)
	}
	c.matches(t, h.pool)
}

// A step that changes nothing looks at no row of the change log, however
// many instances the pool holds, while a reader waits; a verb looks at
// the one row it changed and wakes the reader with it (docs/design.md
// §7.2: the log costs the changes, not the pool).
func TestChangesCostTheChangesNotThePool(t *testing.T) {
	h := bigPool(t, 2000)
	first, err := h.pool.ChangesSince(0, 5000)
	if err != nil || len(first.Items) != 2000 {
		t.Fatalf("first read: %d items, %v", len(first.Items), err)
	}
	looked := func() uint64 {
		h.pool.mu.Lock()
		defer h.pool.mu.Unlock()
		return h.pool.changes.looked
	}
	done := make(chan bool, 1)
	go func() { done <- h.pool.WaitChanges(t.Context(), first.Latest) }()
	wait.Until(t, "a reader waiting", 20*time.Second, func() bool {
		h.pool.mu.Lock()
		defer h.pool.mu.Unlock()
		return h.pool.changes.waiters == 1
	})
	h.clk.Advance(time.Second) // nothing due: probes at +10s, listing at +1m
	before := looked()
	for range 10 {
		h.pool.Step()
	}
	if n := looked() - before; n != 0 {
		t.Fatalf("10 steps with nothing changed looked at %d rows of the change log (2,000 instances, a reader waiting); want 0", n)
	}
	id := first.Items[1000].ID
	before = looked()
	if _, err := h.pool.SetIdleBehavior(id, IdleHold); err != nil {
		t.Fatal(err)
	}
	if n := looked() - before; n != 1 {
		t.Fatalf("a hold looked at %d rows of the change log; want 1", n)
	}
	wait.Until(t, "the waiting reader woken by the hold", 20*time.Second, func() bool {
		select {
		case ok := <-done:
			return ok
		default:
			return false
		}
	})
	ch, err := h.pool.ChangesSince(first.Latest, 0)
	if err != nil || len(ch.Items) != 1 || ch.Items[0].ID != id || ch.Items[0].IdleBehavior != IdleHold {
		t.Fatalf("changes after the hold: %+v, %v; want %s held alone", ch.Items, err, id)
	}
}
