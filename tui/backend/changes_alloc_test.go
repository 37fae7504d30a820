package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"dispatch-tui/engine/api"
	"dispatch-tui/engine/view"
)

// A refresh reads its changes a container at a time into rows: what it
// allocates for a page of changes is about the rows and their strings,
// not the page's decoded containers in a slice grown as it decodes and
// copied again (which at 1 % of a million a refresh raised the heap's
// goal, and the console's RSS, by tens of MB).
func TestChangesReadAContainerAtATime(t *testing.T) {
	const n, k = 20000, 2500
	q := &churnQueue{n: n}
	// The changes page is made once, so that the server's encoding is
	// not counted with the console's reading.
	var page bytes.Buffer
	q.next() // a round changes n/100 containers: k are asked for below
	for range k/q.round() - 1 {
		q.next()
	}
	page.WriteString(`{"items":[`)
	for g := n + 1; g <= n+k; g++ {
		if g > n+1 {
			page.WriteString(",")
		}
		b, _ := json.Marshal(api.ContainerItem{Container: q.item(g)})
		page.Write(b)
	}
	fmt.Fprintf(&page, `],"removed":[],"generation":%d,"latest":%d,"items_available":%d}`, n+k, n+k, n)
	var served atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if from, _ := strconv.Atoi(r.URL.Query().Get("changed_since")); from == n {
			served.Store(true)
			w.Header().Set("Content-Type", "application/json")
			w.Write(page.Bytes())
			return
		}
		q0 := &churnQueue{n: n} // the first read: no changes yet
		q0.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	r := NewRemote(api.NewClient(srv.URL, ""), "test")
	ctx := context.Background()
	if _, err := r.containers(ctx); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rows, err := r.containers(ctx)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !served.Load() {
		t.Fatal("the changes page was not asked for")
	}
	if got, _ := rows.Get(q.item(n + 1).ID); got.Priority != 2 {
		t.Fatalf("changed container at priority %d, want 2", got.Priority)
	}
	per := (after.TotalAlloc - before.TotalAlloc) / k
	t.Logf("%d bytes allocated a change (page of %d bytes, %d a change)", per, page.Len(), page.Len()/k)
	if limit := uint64(page.Len()/k) * 4; per > limit {
		t.Errorf("a refresh of %d changes allocated %d bytes a change, want at most %d (four times a change's JSON)", k, per, limit)
	}
}

// A page's removals apply before its items, which the console reads
// first: an id changed on one page and removed on a later one is gone,
// one removed and listed on the same page stays, as listed.
func TestChangesRemovedBeforeItemsOfTheirPage(t *testing.T) {
	item := func(id string, prio int) string {
		c := view.Container{State: view.Queued, Priority: prio}
		c.ID, c.Name = id, id
		b, _ := json.Marshal(api.ContainerItem{Container: c})
		return string(b)
	}
	pages := map[string]string{
		"0": `{"items":[` + item("a", 1) + `,` + item("b", 1) + `,` + item("c", 1) + `],"removed":[],"generation":3,"latest":3,"items_available":3}`,
		"3": `{"items":[` + item("a", 2) + `,` + item("b", 2) + `],"removed":[],"generation":5,"more":true,"latest":7,"items_available":3}`,
		"5": `{"items":[` + item("b", 3) + `],"removed":["a","b","c"],"generation":7,"latest":7,"items_available":1}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, pages[r.URL.Query().Get("changed_since")])
	}))
	t.Cleanup(srv.Close)
	r := NewRemote(api.NewClient(srv.URL, ""), "test")
	ctx := context.Background()
	if rows, err := r.containers(ctx); err != nil || rows.Len() != 3 {
		t.Fatalf("first read: %v, %d rows", err, rows.Len())
	}
	rows, err := r.containers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	rows.Each(func(c *Row, _ int32) { got = append(got, fmt.Sprintf("%s:%d", c.ID, c.Priority)) })
	if !slices.Equal(got, []string{"b:3"}) {
		t.Errorf("after the changes: %v, want [b:3]", got)
	}
	checkIndex(t, "after the changes", rows)
}

// A refresh keeps its scratch (the changed rows, their index by id) for
// the next while it is small, emptied, and lets a large one go.
func TestRefreshKeepsItsScratch(t *testing.T) {
	const n = 40000 // a round changes 400
	q := &churnQueue{n: n}
	srv := httptest.NewServer(q)
	t.Cleanup(srv.Close)
	r := NewRemote(api.NewClient(srv.URL, ""), "test")
	ctx := context.Background()
	if _, err := r.containers(ctx); err != nil {
		t.Fatal(err)
	}
	q.next()
	if _, err := r.containers(ctx); err != nil {
		t.Fatal(err)
	}
	rc := &r.copy
	if cap(rc.changed) < q.round() || len(rc.changed) != 0 || rc.last == nil || len(rc.last) != 0 {
		t.Fatalf("after a refresh of %d changes: scratch of %d rows (cap %d), index %v; want it kept, empty", q.round(), len(rc.changed), cap(rc.changed), rc.last)
	}
	for _, row := range rc.changed[:cap(rc.changed)] {
		if row.ID != "" {
			t.Fatalf("the kept scratch holds row %s", row.ID)
		}
	}
	for range scratchKeep/q.round() + 1 {
		q.next()
	}
	if _, err := r.containers(ctx); err != nil {
		t.Fatal(err)
	}
	if rc.changed != nil || rc.last != nil {
		t.Errorf("after a refresh of over %d changes the scratch was kept (%d rows, %d ids)", scratchKeep, cap(rc.changed), len(rc.last))
	}
}
