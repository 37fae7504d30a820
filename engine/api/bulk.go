// POST /v1/containers/bulk: one container verb for a list of ids or for
// the containers a selector matches (docs/design.md §7.2, "Bulk verbs").

package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"dispatch-tui/engine"
	"dispatch-tui/engine/view"
)

// BulkRequest is the body of POST /v1/containers/bulk: a verb and either
// ids (at most MaxBatchItems) or a selector. A selector request changes
// at most limit containers (at most, and by default, MaxBatchItems) in
// submission order from continue on; the answer's continue is where the
// next request goes on.
type BulkRequest struct {
	Verb     string    `json:"verb"` // a view.ContainerVerb's name; priority takes Priority
	Priority *int      `json:"priority,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	IDs      []string  `json:"ids,omitempty"`
	Selector *Selector `json:"selector,omitempty"`
	Limit    int       `json:"limit,omitempty"`
	Continue string    `json:"continue,omitempty"`
}

// Selector is the filter of GET /v1/containers (state, label, q) as a
// bulk verb takes it.
type Selector struct {
	State []string `json:"state,omitempty"`
	Label []string `json:"label,omitempty"` // "key=value", all must match
	Q     string   `json:"q,omitempty"`
}

// BulkAnswer is the answer of POST /v1/containers/bulk: each container's
// result, in the order of the ids (or of submission), and how many the
// verb applied to and failed on.
type BulkAnswer struct {
	Items    []BulkItem `json:"items"`
	OK       int        `json:"ok"`
	Failed   int        `json:"failed"`
	Continue string     `json:"continue,omitempty"`
}

// BulkItem is one container's result: its state after the verb, or the
// error (and the status a single verb would have answered) when it failed.
type BulkItem struct {
	ID       string     `json:"id"`
	State    view.State `json:"state,omitempty"`
	Held     bool       `json:"held,omitempty"`
	Priority int        `json:"priority"`
	Error    string     `json:"error,omitempty"`
	Status   int        `json:"status,omitempty"`
}

func (s *server) bulk(w http.ResponseWriter, r *http.Request) {
	var body BulkRequest
	if herr := decodeBody(w, r, &body, true); herr != nil {
		writeError(w, herr)
		return
	}
	req, herr := bulkRequest(body)
	if herr != nil {
		writeError(w, herr)
		return
	}
	req.Actor = actor(r)
	out, err := s.eng.Bulk(req)
	if err != nil && out.Results == nil {
		writeError(w, classify(err))
		return
	}
	ans := BulkAnswer{Items: make([]BulkItem, len(out.Results))}
	for i, res := range out.Results {
		it := BulkItem{ID: res.ID, State: res.State, Held: res.Held, Priority: res.Priority}
		if res.Err != nil {
			herr := classify(res.Err)
			it.Error, it.Status, it.State = herr.msg, herr.status, ""
			ans.Failed++
		} else {
			ans.OK++
		}
		ans.Items[i] = it
	}
	if out.More {
		ans.Continue = continueToken(out.Next)
	}
	if err != nil { // the store: the changes are made, their write is retried
		writeError(w, classify(fmt.Errorf("%d containers changed, but not yet written: %w", ans.OK, err)))
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

// bulkRequest checks a bulk body and makes it the engine's request.
func bulkRequest(b BulkRequest) (engine.BulkRequest, *httpError) {
	var req engine.BulkRequest
	verb, err := view.ParseContainerVerb(b.Verb)
	switch {
	case err != nil:
		return req, badRequest("verb", "verb: "+err.Error())
	case verb.TakesValue() && b.Priority == nil:
		return req, badRequest("priority", "priority: required with verb "+verb.String())
	case !verb.TakesValue() && b.Priority != nil:
		return req, badRequest("priority", "priority: only with verb "+view.ContainerPriority.String())
	}
	req.Verb, req.Priority = verb, b.Priority
	req.Reason = b.Reason
	switch {
	case len(b.IDs) > 0 && b.Selector != nil:
		return req, badRequest("selector", "selector: give ids or a selector, not both")
	case len(b.IDs) > MaxBatchItems:
		return req, &httpError{status: http.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("%d ids in one request: at most %d (split them into several requests)", len(b.IDs), MaxBatchItems)}
	case len(b.IDs) > 0:
		if b.Limit != 0 || b.Continue != "" {
			return req, badRequest("limit", "limit and continue: only with a selector")
		}
		req.IDs = b.IDs
		return req, nil
	case b.Selector == nil:
		return req, badRequest("ids", "ids or selector: required (the containers the verb applies to)")
	}
	v := url.Values{"state": b.Selector.State, "label": b.Selector.Label}
	if b.Selector.Q != "" {
		v.Set("q", b.Selector.Q)
	}
	opts, herr := parseListQuery(v)
	if herr != nil {
		herr.field = "selector." + herr.field
		herr.msg = "selector." + herr.msg
		return req, herr
	}
	if b.Limit < 0 {
		return req, badRequest("limit", "limit: must not be negative")
	}
	opts.Limit = 0
	req.Filter = &opts
	req.Limit = min(b.Limit, MaxBatchItems)
	if req.Limit == 0 {
		req.Limit = MaxBatchItems
	}
	from, herr := parseContinue(b.Continue)
	if herr != nil {
		return req, herr
	}
	req.From = from
	return req, nil // an empty selector is the engine's to refuse (ErrEmptySelector)
}

// Bulk applies a verb to the ids or the selector of req in one request
// (see BulkRequest); per-container failures are in the answer's items.
func (c *Client) Bulk(ctx context.Context, req BulkRequest) (BulkAnswer, error) {
	var ans BulkAnswer
	err := c.do(ctx, http.MethodPost, "/v1/containers/bulk", nil, req, &ans)
	return ans, err
}

// Err is the item's failure as an *APIError, nil when the verb applied.
func (it BulkItem) Err() error {
	if it.Error == "" {
		return nil
	}
	return &APIError{Status: it.Status, Message: it.Error, fromAPI: true}
}
