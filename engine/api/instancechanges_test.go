package api

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/view"
)

// instanceCopy applies pages of instance changes to a copy keyed by id
// (the creates in flight apart, always whole).
type instanceCopy struct {
	gen      uint64
	rows     map[view.InstanceID]view.Instance
	creating int
	pages    int
	removed  []string
}

func (c *instanceCopy) follow(t *testing.T, cl *Client, limit int) {
	t.Helper()
	if c.rows == nil {
		c.rows = map[view.InstanceID]view.Instance{}
	}
	c.removed = nil
	for {
		ch, err := cl.InstanceChanges(t.Context(), c.gen, limit, 0)
		if err != nil {
			t.Fatalf("instance changes since %d: %v", c.gen, err)
		}
		c.pages++
		c.removed = append(c.removed, ch.Removed...)
		for _, id := range ch.Removed {
			if id == "" {
				c.creating = 0
			}
			delete(c.rows, view.InstanceID(id))
		}
		for _, v := range ch.Items {
			if v.ID == "" {
				c.creating++
			} else {
				c.rows[v.ID] = v
			}
		}
		c.gen = ch.Generation
		if !ch.More {
			return
		}
	}
}

// matches fails unless the copy holds what GET /v1/instances lists.
func (c *instanceCopy) matches(t *testing.T, cl *Client) {
	t.Helper()
	list, err := cl.Instances(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	creating := 0
	for _, v := range list {
		if v.ID == "" {
			creating++
			continue
		}
		got, ok := c.rows[v.ID]
		if !ok || got.State != v.State || got.IdleBehavior != v.IdleBehavior || !slices.Equal(got.Containers, v.Containers) {
			t.Fatalf("instance %s: the copy has %+v (present %v), the list %+v", v.ID, got, ok, v)
		}
	}
	if len(list)-creating != len(c.rows) || creating != c.creating {
		t.Fatalf("the copy has %d instances and %d creates, the list %d and %d", len(c.rows), c.creating, len(list)-creating, creating)
	}
}

// A client that reads every instance once (changed_since=0, paged) and
// then follows the changes has what the list has, through a verb and a
// destroy; a generation the daemon does not know is 410.
func TestInstanceChangesFollowTheList(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for _, name := range []string{"a", "b", "c"} {
		_, inst := e.running(name)
		ids = append(ids, inst)
	}
	var c instanceCopy
	c.follow(t, e.client, 1)
	if len(c.rows) != 3 || c.pages < 3 {
		t.Fatalf("first read: %d instances in %d pages of 1; want 3 in 3 or more", len(c.rows), c.pages)
	}
	c.matches(t, e.client)

	ctx := t.Context()
	if _, err := e.client.InstanceVerb(ctx, ids[0], view.InstanceHold, "test"); err != nil {
		t.Fatal(err)
	}
	c.follow(t, e.client, 0)
	if got := c.rows[view.InstanceID(ids[0])]; got.IdleBehavior != view.IdleHold {
		t.Fatalf("%s held: the copy shows %q", ids[0], got.IdleBehavior)
	}
	c.matches(t, e.client)

	if _, err := e.client.InstanceVerb(ctx, ids[1], view.InstanceKill, "test"); err != nil {
		t.Fatal(err)
	}
	e.until(ids[1]+" gone", 300, func() bool { _, ok := e.eng.Instance(ids[1]); return !ok })
	c.follow(t, e.client, 0)
	if !slices.Contains(c.removed, ids[1]) {
		t.Fatalf("%s destroyed: removed %v", ids[1], c.removed)
	}
	c.matches(t, e.client)

	_, err := e.client.InstanceChanges(ctx, c.gen+1000, 0, 0)
	if view.KindOf(err) != view.KindGone || !strings.Contains(err.Error(), "changed_since=0") {
		t.Fatalf("changes since an unknown generation: %v; want kind gone saying to read again", err)
	}
	resp, body := e.do("GET", "/v1/instances?changed_since=x", nil, nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "changed_since") {
		t.Fatalf("changed_since=x: %d %s, want a 400 naming changed_since", resp.StatusCode, body)
	}
}

// A watch (wait) answers when an instance changes, with the change.
func TestInstanceChangesWatch(t *testing.T) {
	e := newEnv(t)
	_, inst := e.running("a")
	ctx := t.Context()
	first, err := e.client.InstanceChanges(ctx, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		ch  InstanceChanges
		err error
	}
	done := make(chan result, 1)
	go func() {
		ch, err := e.client.InstanceChanges(ctx, first.Latest, 0, 30*time.Second)
		done <- result{ch, err}
	}()
	if _, err := e.eng.ApplyInstanceVerb(inst, view.InstanceDrain, "test", ""); err != nil {
		t.Fatal(err)
	}
	var r result
	// The engine's loop steps on the pool's signal; here the test steps.
	wait.With{Step: func() { e.eng.Step() }}.Until(t, "the watch to answer", 20*time.Second, func() bool {
		select {
		case r = <-done:
			return true
		default:
			return false
		}
	})
	drained := slices.ContainsFunc(r.ch.Items, func(v view.Instance) bool {
		return string(v.ID) == inst && v.IdleBehavior == view.IdleDrain
	})
	if r.err != nil || !drained {
		t.Fatalf("the watch answered %+v, %v; want %s draining", r.ch, r.err, inst)
	}
}
