// Containers as GET /v1/containers and GET /v1/containers/{id} send them:
// the record and what it has cost so far (docs/design.md §6.1), which the
// record itself does not hold (the ledger does).

package api

import "dispatch-tui/engine/view"

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
