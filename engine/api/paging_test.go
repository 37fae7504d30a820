package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"dispatch-tui/engine/view"
)

// listPage GETs one page of containers and returns it with the continue
// token (empty on the last page).
func (e *apiEnv) listPage(t *testing.T, query string) ([]view.Container, string) {
	t.Helper()
	resp, data := e.req(t, "GET", "/v1/containers?"+query, nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET ?%s: status %d: %s", query, resp.StatusCode, data)
	}
	var body listBody[view.Container]
	if err := json.Unmarshal(data, &body); err != nil {
		t.Fatal(err)
	}
	return body.Items, resp.Header.Get(ContinueHeader)
}

// Following X-Continue-Token from a first page visits every container that
// existed when paging began exactly once, while others submit, and no
// container twice.
func TestListContainersPagesCoverEveryContainerOnce(t *testing.T) {
	e := newEnv(t)
	before := map[string]bool{}
	for i := range 45 {
		before[e.submit(fmt.Sprintf("c-%02d", i), []string{"true"}, 0)] = true
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p := 0
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := e.client.Submit(t.Context(), view.Spec{Name: fmt.Sprintf("new-%d", i), Command: []string{"true"}, Priority: &p}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	seen := map[string]int{}
	query, pages := "limit=4", 0
	for {
		items, token := e.listPage(t, query)
		pages++
		if len(items) > 4 {
			t.Fatalf("page of %d items, limit 4", len(items))
		}
		for _, c := range items {
			seen[c.ID]++
		}
		if token == "" {
			break
		}
		if pages == 5 {
			close(stop) // the rest of the walk reaches an end
			wg.Wait()
		}
		query = "limit=4&continue=" + url.QueryEscape(token)
	}
	if pages < 5 {
		t.Fatalf("only %d pages", pages)
	}
	for id := range before {
		if seen[id] != 1 {
			t.Errorf("container %s listed %d times", id, seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("container %s listed %d times", id, n)
		}
	}
}

// A token that this server did not issue, or one combined with a sort or
// an offset, is a 400 naming the continue parameter.
func TestListContainersBadContinueToken(t *testing.T) {
	e := newEnv(t)
	for range 3 {
		e.submit("x", []string{"true"}, 0)
	}
	_, token := e.listPage(t, "limit=1")
	if token == "" {
		t.Fatal("no continue token with more containers than the limit")
	}
	for _, q := range []string{
		"continue=not-a-token",
		"continue=" + url.QueryEscape(token[:len(token)-2]),
		"continue=AAAAAAAAAAAAAA", // wrong version byte
		"continue=" + url.QueryEscape(token) + "&sort=name",
		"continue=" + url.QueryEscape(token) + "&offset=1",
		"continue=" + url.QueryEscape(token) + "&limit=-1",
	} {
		t.Run(q, func(t *testing.T) {
			resp, data := e.req(t, "GET", "/v1/containers?"+q, nil, nil)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", resp.StatusCode, data)
			}
			var body struct {
				Field string `json:"field"`
			}
			if err := json.Unmarshal(data, &body); err != nil {
				t.Fatalf("%v: %s", err, data)
			}
			if want := map[bool]string{true: "limit", false: "continue"}[q[len(q)-2:] == "-1"]; body.Field != want {
				t.Fatalf("field %q, want %q: %s", body.Field, want, data)
			}
		})
	}
}

// Limits: the page holds at most limit items (0 or above the cap means the
// cap), and the token is set exactly when more remain.
func TestListContainersPageLimits(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for i := range 5 {
		ids = append(ids, e.submit(fmt.Sprintf("c-%d", i), []string{"true"}, 0))
	}
	for _, tc := range []struct {
		query     string
		wantLen   int
		wantToken bool
	}{
		{"limit=1", 1, true},
		{"limit=4", 4, true},
		{"limit=5", 5, false},
		{"limit=6", 5, false},
		{"limit=0", 5, false},
		{"limit=20000", 5, false},
		{"limit=2&state=Queued", 2, true},
		{"limit=2&state=Complete", 0, false},
	} {
		t.Run(tc.query, func(t *testing.T) {
			items, token := e.listPage(t, tc.query)
			if len(items) != tc.wantLen || (token != "") != tc.wantToken {
				t.Fatalf("%d items, token %q; want %d items, token %v", len(items), token, tc.wantLen, tc.wantToken)
			}
			for i, c := range items {
				if c.ID != ids[i] {
					t.Fatalf("item %d is %s, want %s (submission order)", i, c.ID, ids[i])
				}
			}
		})
	}
	// The last page of a chain has no token; the pages are in order.
	items, token := e.listPage(t, "limit=3")
	more, last := e.listPage(t, "limit=3&continue="+url.QueryEscape(token))
	if last != "" || len(items)+len(more) != 5 || more[0].ID != ids[3] || more[1].ID != ids[4] {
		t.Fatalf("second page %v, token %q", more, last)
	}
}
