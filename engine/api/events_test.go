package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestEventsNewestFirst: order=newest gives the newest events first, how
// many there are in all, and pages back through the rest, each event once.
func TestEventsNewestFirst(t *testing.T) {
	e := newEnv(t)
	for range 25 {
		e.submit("x", []string{"true"}, 1)
	}
	all, err := e.client.Events(t.Context(), 0, MaxListLimit)
	if err != nil || len(all) < 25 {
		t.Fatalf("events: %d, %v", len(all), err)
	}
	p, err := e.client.EventsNewest(t.Context(), 0, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 10 || p.Items[0].Seq != all[len(all)-1].Seq || p.Available != len(all) || p.Before == 0 {
		t.Fatalf("first page: %d items from seq %d, available %d, before %d; want 10 from %d, %d available, more",
			len(p.Items), p.Items[0].Seq, p.Available, p.Before, all[len(all)-1].Seq, len(all))
	}
	seen := map[uint64]bool{}
	var prev uint64
	for pages := 0; ; pages++ {
		for _, ev := range p.Items {
			if seen[ev.Seq] || (prev != 0 && ev.Seq >= prev) {
				t.Fatalf("seq %d after %d: not newest first, or seen twice", ev.Seq, prev)
			}
			seen[ev.Seq], prev = true, ev.Seq
		}
		if p.Before == 0 || pages > 10 {
			break
		}
		if p, err = e.client.EventsNewest(t.Context(), 0, p.Before, 10); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != len(all) {
		t.Errorf("%d events over the pages, want %d", len(seen), len(all))
	}
	// since bounds it below, and the count with it.
	since := all[len(all)-5].Seq
	p, err = e.client.EventsNewest(t.Context(), since, 0, 100)
	if err != nil || len(p.Items) != 4 || p.Available != 4 || p.Before != 0 {
		t.Errorf("since %d: %d items, %d available, before %d, %v; want 4, 4, 0", since, len(p.Items), p.Available, p.Before, err)
	}
	for _, q := range []string{"order=bogus", "before=3", "order=newest&before=x"} {
		resp, body := e.do(http.MethodGet, "/v1/events?"+q, nil, nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), strings.Split(strings.Split(q, "&")[len(strings.Split(q, "&"))-1], "=")[0]) {
			t.Errorf("%s: %d %s, want a 400 naming the parameter", q, resp.StatusCode, body)
		}
	}
}
