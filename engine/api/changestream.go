// The client's read of a containers changes page one item at a time: a
// console applying a page holds one container decoded at a time, not the
// page's items in a slice grown as they decode and copied again, nor the
// response whole in the decoder's buffer.

package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// ContainerChangesEach is ContainerChanges with each item handed to each
// as it is decoded, in order, instead of being kept: the page returned
// has no Items. The container given to each is valid during the call
// only (the next item is decoded into it).
func (c *Client) ContainerChangesEach(ctx context.Context, since uint64, limit int, wait time.Duration, each func(*view.Container)) (Changes, error) {
	var body ChangesBody
	err := streamChanges(ctx, c, "/v1/containers", since, limit, wait, func(dec *json.Decoder) (err error) {
		body, err = decodeChangesStream(dec, each)
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

// decodeChangesStream reads a ChangesBody from dec, its items handed to
// each one at a time (into one reused view.Container; an item's cost,
// the list's and not a console's, is not read), the other members kept
// as they come and read into the body at the end.
func decodeChangesStream(dec *json.Decoder, each func(*view.Container)) (ChangesBody, error) {
	var body ChangesBody
	if err := expectDelim(dec, '{'); err != nil {
		return body, err
	}
	rest := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return body, err
		}
		key, _ := tok.(string)
		if key != itemsKey {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return body, fmt.Errorf("%s: %w", key, err)
			}
			rest[key] = v
			continue
		}
		if err := decodeItems(dec, each); err != nil {
			return body, fmt.Errorf("%s: %w", itemsKey, err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return body, err
	}
	b, err := json.Marshal(rest)
	if err != nil {
		return body, err
	}
	return body, json.Unmarshal(b, &body)
}

// decodeItems reads a JSON array of containers (or null) from dec.
func decodeItems(dec *json.Decoder, each func(*view.Container)) error {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return err // null: no items
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("want an array, got %v", tok)
	}
	var c view.Container
	var raw json.RawMessage
	for dec.More() {
		raw = raw[:0]
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		c = view.Container{}
		if err := readItem(raw, &c); err != nil {
			return err
		}
		each(&c)
	}
	return expectDelim(dec, ']')
}

// readItem decodes raw, one item of a changes page, into c (zero), as
// json.Unmarshal would: an item as the daemon writes it (a view, then its
// cost: changespage.go) by queue.ReadView, without reflection — most of an
// attached console's CPU under a churn was encoding/json reading its
// pages (BENCHMARKS.md) — and anything else by encoding/json. The cost is
// the list's, not the console's: the view is read without it.
func readItem(raw []byte, c *view.Container) error {
	if at, ok := costAt(raw); ok {
		raw[at] = '}' // the view alone: raw is the decoder's copy, read once
		if queue.ReadView(raw[:at+1], c) {
			return nil
		}
		raw[at] = ','
	}
	return json.Unmarshal(raw, c)
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

// expectDelim reads the delimiter d from dec.
func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return fmt.Errorf("want %v, got %v", d, tok)
	}
	return nil
}
