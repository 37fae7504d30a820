// GET /v1/containers?changed_since=GEN: what changed since a generation,
// paged, with a long poll (wait) for watching readers.

package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"dispatch-tui/engine/view"
)

// MaxWait caps the wait of a changes request (a long poll); longer asks
// are cut to it.
const MaxWait = time.Minute

// ChangesBody is the answer to GET /v1/containers?changed_since=GEN.
type ChangesBody struct {
	// Items are the containers that changed, as the list shows them.
	Items []ContainerItem `json:"items"`
	// Removed are the ids of containers dropped since (keep_finished):
	// apply them before Items.
	Removed []string `json:"removed"`
	// Generation is where this page ends: the changed_since of the next
	// request.
	Generation uint64 `json:"generation"`
	// More says the page was cut at limit: ask again at once.
	More bool `json:"more,omitempty"`
	// Latest is the generation now (generation unless more): a watcher
	// that only wants to know of a change goes on from it.
	Latest uint64 `json:"latest"`
	// ItemsAvailable is how many containers there are now (the progress
	// of a first read, changed_since=0).
	ItemsAvailable int `json:"items_available"`
}

// changesQuery is what a changes request asks: since, a page of limit, and
// how long to wait for a change when there is none yet.
type changesQuery struct {
	since uint64
	limit int
	wait  time.Duration
}

// parseChangesQuery reads changed_since, limit and wait; the list's other
// parameters do not apply to changes.
func parseChangesQuery(v url.Values) (changesQuery, *httpError) {
	var cq changesQuery
	for _, p := range []string{"state", "q", "sort", "offset", "label", "continue"} {
		if v.Has(p) {
			return cq, badRequest(p, p+": cannot be combined with changed_since (changes are of everything listed; filter the copy)")
		}
	}
	since, err := strconv.ParseUint(v.Get("changed_since"), 10, 64)
	if err != nil {
		return cq, badRequest("changed_since", fmt.Sprintf("changed_since: want a generation (a whole number, 0 for everything), got %q", v.Get("changed_since")))
	}
	cq.since = since
	var herr *httpError
	if cq.limit, herr = intParam(v, "limit", 0); herr != nil {
		return cq, herr
	}
	if cq.limit == 0 || cq.limit > MaxListLimit {
		cq.limit = MaxListLimit
	}
	if s := v.Get("wait"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return cq, badRequest("wait", fmt.Sprintf("wait: want a duration such as 30s, got %q", s))
		}
		cq.wait = min(d, MaxWait)
	}
	return cq, nil
}

// awaitChanges reads a changes request's query and, when it asks to wait
// for a change after a generation, waits for one with waitFor up to its
// wait. false: answered already (a bad query) or the client left.
func awaitChanges(w http.ResponseWriter, r *http.Request, v url.Values, waitFor func(context.Context, uint64) bool) (changesQuery, bool) {
	cq, herr := parseChangesQuery(v)
	if herr != nil {
		writeError(w, herr)
		return cq, false
	}
	if cq.since != 0 && cq.wait > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), cq.wait)
		waitFor(ctx, cq.since)
		cancel()
		if r.Context().Err() != nil {
			return cq, false // the client left
		}
	}
	return cq, true
}

// listChanges answers a changes request: at once when something changed
// since (or for a first read), else when something does or wait ends.
func (s *server) listChanges(w http.ResponseWriter, r *http.Request, v url.Values) {
	cq, ok := awaitChanges(w, r, v, s.eng.WaitContainerChanges)
	if !ok {
		return
	}
	s.writeChanges(w, cq)
}

// changesValues is the query of a changes request (parseChangesQuery
// reads it).
func changesValues(since uint64, limit int, wait time.Duration) url.Values {
	v := url.Values{"changed_since": {strconv.FormatUint(since, 10)}}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if wait > 0 {
		v.Set("wait", wait.String())
	}
	return v
}

// ChangesPage is one page of the rows of kind T that changed, as the
// client reads it (containers or instances).
type ChangesPage[T any] struct {
	Items      []T
	Removed    []string
	Generation uint64
	More       bool
	Latest     uint64
	Available  int
}

// Changes is one page of the containers that changed.
type Changes = ChangesPage[view.Container]

// readChanges sends a changes request for the list at path and decodes
// its answer, a B.
func readChanges[B any](ctx context.Context, c *Client, path string, since uint64, limit int, wait time.Duration) (B, error) {
	var body B
	err := streamChanges(ctx, c, path, since, limit, wait, func(p *pageBuf) error { return json.Unmarshal(p.body, &body) })
	return body, err
}

// streamChanges sends a changes request for the list at path, reads its
// answer whole into a kept buffer (readBufs) and has decode read it there.
func streamChanges(ctx context.Context, c *Client, path string, since uint64, limit int, wait time.Duration, decode func(*pageBuf) error) error {
	resp, err := c.send(ctx, http.MethodGet, path, changesValues(since, limit, wait), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	p := getReadBuf()
	defer p.put()
	if err := p.readAll(resp.Body); err != nil {
		return fmt.Errorf("GET %s?changed_since: read response: %w", path, err)
	}
	if err := decode(p); err != nil {
		return fmt.Errorf("GET %s?changed_since: decode response: %w", path, err)
	}
	return nil
}

// ContainerChanges asks for up to limit containers changed after
// generation since (0: every container), waiting up to wait for one when
// none has (0: answer at once). An error of kind view.KindGone says the
// daemon no longer knows that generation: read again from 0.
func (c *Client) ContainerChanges(ctx context.Context, since uint64, limit int, wait time.Duration) (Changes, error) {
	var items []view.Container
	out, err := c.ContainerChangesEach(ctx, since, limit, wait, func(v *view.Container) { items = append(items, *v) })
	if err != nil {
		return Changes{}, err
	}
	out.Items = items
	return out, nil
}
