// GET /v1/cost: what the instances cost, summed by a container label, the
// instance type or the containers' state, with the waste lines, the
// projection and the dollar caps (docs/design.md §6.1, §7.2); and the
// client's call of it.

package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"dispatch-tui/engine/cost"
	"dispatch-tui/engine/view"
)

// DefaultCostBy is what /v1/cost sums by when the query does not say.
const DefaultCostBy = "type"

func (s *server) cost(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, badRequest("", "malformed query string: "+err.Error()))
		return
	}
	byText := q.Get("by")
	if byText == "" {
		byText = DefaultCostBy
	}
	by, err := cost.ParseBy(byText)
	if err != nil {
		writeError(w, badRequest("by", err.Error()))
		return
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			writeError(w, badRequest("since", fmt.Sprintf("since %q: want a duration back from now, such as 24h or 90m", v)))
			return
		}
		since = s.eng.Now().Add(-d)
	}
	writeJSON(w, http.StatusOK, s.eng.Cost(by, since))
}

// Cost asks what the instances cost over the last since (0: everything
// the dispatcher keeps), summed by by ("" = the server's default).
func (c *Client) Cost(ctx context.Context, by string, since time.Duration) (view.CostReport, error) {
	v := url.Values{}
	if by != "" {
		v.Set("by", by)
	}
	if since > 0 {
		v.Set("since", since.String())
	}
	var r view.CostReport
	err := c.do(ctx, http.MethodGet, "/v1/cost", v, nil, &r)
	return r, err
}
