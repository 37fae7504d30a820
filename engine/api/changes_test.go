package api

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"dispatch-tui/engine/enginetest/wait"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// A client that reads everything once (changed_since=0, paged) and then
// follows the changes has the same containers as the list, through a
// hold and submits; a generation the daemon does not know is 410.
func TestContainerChangesFollowTheList(t *testing.T) {
	e := newEnv(t)
	for range 7 {
		e.submit("c", []string{"true"}, 1)
	}
	ctx := t.Context()
	rows := map[string]view.Container{}
	var gen uint64
	pages := 0
	apply := func(wait time.Duration) {
		t.Helper()
		for {
			ch, err := e.client.ContainerChanges(ctx, gen, 3, wait)
			if err != nil {
				t.Fatalf("changes since %d: %v", gen, err)
			}
			pages++
			for _, id := range ch.Removed {
				delete(rows, id)
			}
			for _, c := range ch.Items {
				rows[c.ID] = c
			}
			gen = ch.Generation
			if !ch.More {
				return
			}
		}
	}
	apply(0)
	if len(rows) != 7 || pages < 3 {
		t.Fatalf("first read: %d containers in %d pages of 3; want 7 in 3", len(rows), pages)
	}
	id := e.submit("d", []string{"true"}, 1)
	if _, err := e.client.ContainerVerb(ctx, id, view.ContainerHold, "test"); err != nil {
		t.Fatal(err)
	}
	apply(0)
	list, _, err := e.client.Containers(ctx, ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(list) {
		t.Fatalf("the copy has %d containers, the list %d", len(rows), len(list))
	}
	for _, c := range list {
		if got := rows[c.ID]; got.State != c.State || got.Held != c.Held || got.Priority != c.Priority {
			t.Fatalf("%s: copy %s held=%v, list %s held=%v", c.ID, got.State, got.Held, c.State, c.Held)
		}
	}

	_, err = e.client.ContainerChanges(ctx, gen+1000, 3, 0)
	if view.KindOf(err) != view.KindGone || !strings.Contains(err.Error(), "changed_since=0") {
		t.Fatalf("changes since an unknown generation: %v; want kind gone saying to read again", err)
	}
	resp, body := e.do("GET", "/v1/containers?changed_since=1&state=Queued", nil, nil)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("changed_since with state: %d %s, want 400", resp.StatusCode, body)
	}
}

// A watch (wait) on a quiet queue answers when something changes, with
// the change, long before the wait ends.
func TestContainerChangesWatch(t *testing.T) {
	e := newEnv(t)
	e.submit("a", []string{"true"}, 1)
	ctx := t.Context()
	first, err := e.client.ContainerChanges(ctx, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		ch  Changes
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		ch, err := e.client.ContainerChanges(ctx, first.Generation, 0, 30*time.Second)
		done <- result{ch, err, time.Now()}
	}()
	// Not answered while the queue is quiet (the request is waiting).
	select {
	case r := <-done:
		t.Fatalf("a watch on a quiet queue answered at once: %+v, %v", r.ch, r.err)
	case <-time.After(100 * time.Millisecond):
	}
	submitted := time.Now()
	id := e.submit("b", []string{"true"}, 1)
	select {
	case r := <-done:
		if r.err != nil || len(r.ch.Items) != 1 || r.ch.Items[0].ID != id {
			t.Fatalf("the watch answered %+v, %v; want %s", r.ch.Items, r.err, id)
		}
		t.Logf("change seen %s after the submit returned", r.at.Sub(submitted))
	case <-time.After(wait.Budget(20 * time.Second)):
		t.Fatal("the watch did not answer within 20 s of a submit")
	}
}

// The changes page, written a chunk at a time without reflection, is byte
// for byte what writeJSON writes for its ChangesBody: a first read in
// pages (More), a page of what changed, an empty one; with costs, exit
// codes, labels and text that needs escaping.
func TestChangesPageMatchesEncodingJSON(t *testing.T) {
	e := newEnv(t)
	ranID, _ := e.running("ran <a&b>")
	for i := range 5 {
		e.Submit(queue.Spec{Name: "q\u2028\"" + strconv.Itoa(i), Command: []string{"true", "é\x01"},
			RuntimeConstraints: queue.Constraints{VCPUs: 1 + 7*(i%2), RAM: gib}, Labels: map[string]string{"team": "<g>", "i": strconv.Itoa(i)}})
	}
	e.clk.Advance(time.Hour + 123456789)
	e.step(2)
	if _, err := e.client.ContainerVerb(t.Context(), ranID, view.ContainerKill, "test"); err != nil {
		t.Fatal(err)
	}
	e.until("killed", 30, func() bool { return e.state(ranID).Final() })

	check := func(since uint64, limit int) ChangesBody {
		t.Helper()
		resp, got := e.do("GET", fmt.Sprintf("/v1/containers?changed_since=%d&limit=%d", since, limit), nil, nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("since %d: status %d, %q: %s", since, resp.StatusCode, resp.Header.Get("Content-Type"), got)
		}
		ch, err := e.eng.ContainerChanges(since, limit)
		if err != nil {
			t.Fatal(err)
		}
		body := ChangesBody{Items: (&server{eng: e.eng}).withCosts(ch.Items), Removed: ch.Removed, Generation: ch.Generation,
			More: ch.More, Latest: ch.Latest, ItemsAvailable: ch.Total}
		if body.Removed == nil {
			body.Removed = []string{}
		}
		w := httptest.NewRecorder()
		writeJSON(w, http.StatusOK, body)
		if want := w.Body.Bytes(); !bytes.Equal(got, want) {
			t.Fatalf("since %d, limit %d:\n got %s\nwant %s", since, limit, got, want)
		}
		return body
	}
	var gen uint64
	costs := 0
	for pages := 0; ; pages++ {
		b := check(gen, 2)
		for _, it := range b.Items {
			if it.Cost != 0 {
				costs++
			}
		}
		gen = b.Generation
		if !b.More {
			if pages < 2 || costs == 0 {
				t.Fatalf("%d pages of 2, %d with a cost: want at least 3 pages and a cost", pages+1, costs)
			}
			break
		}
	}
	if b := check(gen, 100); len(b.Items) != 0 {
		t.Fatalf("nothing changed since %d, yet %d items", gen, len(b.Items))
	}
	prio := 7
	id := e.Submit(queue.Spec{Command: []string{"true"}, Priority: &prio, RuntimeConstraints: queue.Constraints{VCPUs: 8, RAM: gib}})
	if b := check(gen, 100); len(b.Items) != 1 || b.Items[0].ID != id {
		t.Fatalf("since %d: %d items, want the one submitted", gen, len(b.Items))
	}
}
