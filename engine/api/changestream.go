// The client's read of a containers changes page one item at a time: a
// console applying a page holds one container decoded at a time, not the
// page's items in a slice grown as they decode and copied again.

package api

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// ContainerChangesEach is ContainerChanges with each item handed to each
// as it is decoded, in order, instead of being kept: the page returned
// has no Items. The container given to each is valid during the call
// only (the next item is decoded into it). On an error, what each was
// handed is not a page: a page that is not JSON hands nothing over, but
// an item that does not decode as a container ends the page after the
// items before it (decodeChangesPage).
func (c *Client) ContainerChangesEach(ctx context.Context, since uint64, limit int, wait time.Duration, each func(*view.Container)) (Changes, error) {
	return c.containerChanges(ctx, since, limit, wait, nil, each)
}

// Pairs is where ContainerChangesPairs puts a view's labels and
// constraints: the console names it here, reading the engine only
// through its edge (tui's TestConsoleImportsOnlyTheEdge).
type Pairs = queue.Pairs

// ContainerChangesPairs is ContainerChangesEach with each view's labels
// and constraints in pairs when it is handed over (until the next), not
// in maps (queue.ReadViewPairs): for a reader that keeps no maps of them.
func (c *Client) ContainerChangesPairs(ctx context.Context, since uint64, limit int, wait time.Duration, pairs *Pairs, each func(*view.Container)) (Changes, error) {
	return c.containerChanges(ctx, since, limit, wait, pairs, each)
}

func (c *Client) containerChanges(ctx context.Context, since uint64, limit int, wait time.Duration, pairs *queue.Pairs, each func(*view.Container)) (Changes, error) {
	var body ChangesBody
	err := streamChanges(ctx, c, "/v1/containers", since, limit, wait, func(p *pageBuf) (err error) {
		body, err = decodeChangesPage(p, pairs, each)
		return err
	})
	if err != nil {
		return Changes{}, err
	}
	return Changes{Removed: body.Removed, Generation: body.Generation, More: body.More,
		Latest: body.Latest, Available: body.ItemsAvailable}, nil
}

// itemsKey is ChangesBody.Items' name in JSON.
const itemsKey = "items"

// readItem decodes raw, one item of a changes page, into c (zero), as
// json.Unmarshal would: an item as the daemon writes it (a view, then its
// cost: changespage.go) by queue.ReadView, without reflection — most of an
// attached console's CPU under a churn was encoding/json reading its
// pages (BENCHMARKS.md) — and anything else by encoding/json. The cost is
// the list's, not the console's: the view is read without it.
//
// With pairs set, c's labels and constraints go to pairs instead
// (queue.ReadViewPairs, Pairs.TakeMaps).
func readItem(raw []byte, c *view.Container, pairs *queue.Pairs) error {
	if at, ok := costAt(raw); ok {
		raw[at] = '}' // the view alone: raw is in the page's buffer, read once
		read := false
		if pairs != nil {
			read = queue.ReadViewPairs(raw[:at+1], c, pairs)
		} else {
			read = queue.ReadView(raw[:at+1], c)
		}
		if read {
			return nil
		}
		raw[at] = ','
	}
	if err := json.Unmarshal(raw, c); err != nil {
		return err
	}
	if pairs != nil {
		pairs.TakeMaps(c)
	}
	return nil
}

// costAt finds the item's last member, `,"cost":NUMBER}`, and returns
// where its comma is. A number holds no quote or brace, so a match at the
// very end is the object's own member, never text inside a value.
func costAt(raw []byte) (int, bool) {
	const key = `,"cost":`
	end := len(raw) - 1
	if end < 0 || raw[end] != '}' {
		return 0, false
	}
	i := end
	for i > 0 && strings.IndexByte("0123456789.eE+-", raw[i-1]) >= 0 {
		i--
	}
	if i == end || i < len(key) || string(raw[i-len(key):i]) != key {
		return 0, false
	}
	return i - len(key), true
}
