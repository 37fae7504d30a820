// GET /v1/instances?changed_since=GEN: the instance rows that changed
// since a generation, paged, with a long poll (wait), as for containers
// (changes.go).

package api

import (
	"context"
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
	cq, ok := awaitChanges(w, r, v, s.eng.WaitInstanceChanges)
	if !ok {
		return
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

// InstanceChanges is one page of the instance rows that changed.
type InstanceChanges = ChangesPage[view.Instance]

// InstanceChanges asks for up to limit instance rows changed after
// generation since (0: every row), waiting up to wait for one when none
// has (0: answer at once). An error of kind view.KindGone says the daemon
// no longer knows that generation: read again from 0.
func (c *Client) InstanceChanges(ctx context.Context, since uint64, limit int, wait time.Duration) (InstanceChanges, error) {
	body, err := readChanges[InstanceChangesBody](ctx, c, "/v1/instances", since, limit, wait)
	if err != nil {
		return InstanceChanges{}, err
	}
	return InstanceChanges{Items: body.Items, Removed: body.Removed, Generation: body.Generation,
		More: body.More, Latest: body.Latest, Available: body.ItemsAvailable}, nil
}
