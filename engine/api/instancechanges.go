// GET /v1/instances?changed_since=GEN: the instance rows that changed
// since a generation, paged, with a long poll (wait), as for containers
// (changes.go).

package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"dispatch-tui/engine/view"
)

// InstanceChangesBody is the answer to GET /v1/instances?changed_since=GEN:
// ChangesBody's shape, with instances.
type InstanceChangesBody struct {
	// Items are the instance rows that changed, as the list shows them
	// (the creates in flight with an empty id).
	Items []view.Instance `json:"items"`
	// Removed are the ids of instances gone since; "" stands for the
	// creates in flight, which always come whole: drop every row
	// without an id. Apply them before Items.
	Removed    []string `json:"removed"`
	Generation uint64   `json:"generation"`
	More       bool     `json:"more,omitempty"`
	Latest     uint64   `json:"latest"`
	// ItemsAvailable is how many instance rows there are now.
	ItemsAvailable int `json:"items_available"`
}

// listInstanceChanges answers an instance changes request: at once when
// something changed since (or for a first read), else when something
// does or wait ends.
func (s *server) listInstanceChanges(w http.ResponseWriter, r *http.Request, v url.Values) {
	cq, herr := parseChangesQuery(v)
	if herr != nil {
		writeError(w, herr)
		return
	}
	if cq.since != 0 && cq.wait > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), cq.wait)
		s.eng.WaitInstanceChanges(ctx, cq.since)
		cancel()
		if r.Context().Err() != nil {
			return // the client left
		}
	}
	ch, err := s.eng.InstanceChanges(cq.since, cq.limit)
	if err != nil {
		writeError(w, classify(err))
		return
	}
	body := InstanceChangesBody{Items: ch.Items, Removed: ch.Removed, Generation: ch.Generation,
		More: ch.More, Latest: ch.Latest, ItemsAvailable: ch.Total}
	if body.Items == nil {
		body.Items = []view.Instance{}
	}
	if body.Removed == nil {
		body.Removed = []string{}
	}
	writeJSON(w, http.StatusOK, body)
}

// InstanceChanges is one page of the instance rows that changed, as the
// client reads it.
type InstanceChanges struct {
	Items      []view.Instance
	Removed    []string
	Generation uint64
	More       bool
	Latest     uint64
	Available  int
}

// InstanceChanges asks for up to limit instance rows changed after
// generation since (0: every row), waiting up to wait for one when none
// has (0: answer at once). An error of kind view.KindGone says the daemon
// no longer knows that generation: read again from 0.
func (c *Client) InstanceChanges(ctx context.Context, since uint64, limit int, wait time.Duration) (InstanceChanges, error) {
	resp, err := c.send(ctx, http.MethodGet, "/v1/instances", changesValues(since, limit, wait), nil)
	if err != nil {
		return InstanceChanges{}, err
	}
	defer resp.Body.Close()
	var body InstanceChangesBody
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return InstanceChanges{}, fmt.Errorf("GET /v1/instances?changed_since: decode response: %w", err)
	}
	return InstanceChanges{Items: body.Items, Removed: body.Removed, Generation: body.Generation,
		More: body.More, Latest: body.Latest, Available: body.ItemsAvailable}, nil
}
