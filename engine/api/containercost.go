// Containers as GET /v1/containers and GET /v1/containers/{id} send them:
// the record and what it has cost so far (docs/design.md §6.1), which the
// record itself does not hold (the ledger does); and the client's read of
// one container's cost.

package api

import (
	"context"
	"net/http"
	"net/url"

	"dispatch-tui/engine/view"
)

// ContainerItem is a container with its cost in dollars so far.
type ContainerItem struct {
	view.Container
	Cost float64 `json:"cost"`
}

// withCosts pairs cs with their costs.
func (s *server) withCosts(cs []view.Container) []ContainerItem {
	ids := make([]string, len(cs))
	for i := range cs {
		ids[i] = cs[i].ID
	}
	costs := s.eng.ContainerCosts(ids)
	out := make([]ContainerItem, len(cs))
	for i := range cs {
		out[i] = ContainerItem{Container: cs[i], Cost: costs[cs[i].ID]}
	}
	return out
}

// ContainerCost asks what one container has cost so far.
func (c *Client) ContainerCost(ctx context.Context, id string) (float64, error) {
	var v struct {
		Cost float64 `json:"cost"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/containers/"+url.PathEscape(id), nil, nil, &v)
	return v.Cost, err
}
