// Container verbs on many containers, for both backends.

package backend

// ContainersVerb of both backends: the engine's and the API's bulk verbs.

import (
	"context"

	"dispatch-tui/engine"
	"dispatch-tui/engine/api"
	"dispatch-tui/engine/view"
)

// ContainersVerb implements Backend: engine.Bulk, BulkBatch containers a
// store transaction.
func (b *InProcess) ContainersVerb(ctx context.Context, ids []string, v view.ContainerVerb, priority int, reason string) (map[string]error, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	req := engine.BulkRequest{Verb: v, IDs: ids, Actor: b.actor, Reason: reason}
	if v.TakesValue() {
		req.Priority = &priority
	}
	out, err := b.eng.Bulk(req)
	if err != nil && out.Results == nil {
		return nil, err
	}
	var failed map[string]error
	for _, r := range out.Results {
		if r.Err != nil {
			if failed == nil {
				failed = map[string]error{}
			}
			failed[r.ID] = r.Err
		}
	}
	return failed, err
}

// ContainersVerb implements Backend: POST /v1/containers/bulk,
// api.MaxBatchItems ids a request. Ids of a request that failed as a
// whole fail with its error; those after it are not sent.
func (r *Remote) ContainersVerb(ctx context.Context, ids []string, v view.ContainerVerb, priority int, reason string) (map[string]error, error) {
	req := api.BulkRequest{Verb: v.String(), Reason: reason}
	if v.TakesValue() {
		req.Priority = &priority
	}
	var failed map[string]error
	fail := func(id string, err error) {
		if failed == nil {
			failed = map[string]error{}
		}
		failed[id] = err
	}
	for len(ids) > 0 {
		n := min(len(ids), api.MaxBatchItems)
		req.IDs = ids[:n]
		ans, err := r.c.Bulk(ctx, req)
		if err != nil {
			for _, id := range ids {
				fail(id, err)
			}
			return failed, nil
		}
		for _, it := range ans.Items {
			if err := it.Err(); err != nil {
				fail(it.ID, err)
			}
		}
		ids = ids[n:]
	}
	return failed, nil
}
