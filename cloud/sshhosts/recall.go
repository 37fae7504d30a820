// Hosts the store says are this dispatcher's, listed as its own before they answer.

package sshhosts

import (
	"context"
	"errors"
	"fmt"

	"dispatch-tui/cloud"
)

// Hosts the dispatcher's store says are its own, listed as such before they
// answer (docs/design.md §10.1, "At most once"). A host's claim lives in a
// file on the host, so after a restart a host that does not answer would
// be missing from every listing, and the containers the store says run
// there would be taken for gone and run a second time.

// RecallOwned lists each named host as this dispatcher's until its tags
// file can be read (cloud.OwnershipRecaller). Until then its tags are
// presumed: the owner and the host's configured type, no secret. A host
// already read, or unknown to this driver, is left as it is.
func (d *Driver) RecallOwned(ids []cloud.InstanceID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		h := d.byID[id]
		if h == nil || h.read || h.claimed {
			continue
		}
		tags := cloud.Tags{cloud.TagInstanceType: h.it.Name}
		if d.opts.Owner != "" {
			tags[cloud.TagOwner] = d.opts.Owner
		}
		h.tags, h.claimed, h.presumed = tags, true, true
		d.log.Info("sshhosts: host listed as this dispatcher's from its store until it answers", "instance", string(h.id), "address", h.addr)
	}
}

// noteReadLocked records what a read of h's tags file found: the tags
// (found: the file exists), a tags file that is not ours to judge, or no
// answer, which keeps the tags last seen (or presumed).
func (h *Instance) noteReadLocked(tags cloud.Tags, found bool, err error) {
	var pe *parseError
	switch {
	case err == nil:
		h.tags, h.claimed = tags, found
		h.presumed, h.read = false, true
		h.noteReachableLocked()
	case errors.As(err, &pe):
		// Reached, but the tags file is not ours to judge: keep the host
		// out of use and out of the listing.
		h.tags, h.claimed = nil, true
		h.presumed, h.read = false, true
		h.noteReachableLocked()
		h.d.log.Warn("sshhosts: unreadable tags file; host left alone", "instance", string(h.id), "address", h.addr, "err", err)
	default:
		h.noteUnreachableLocked(err)
	}
}

// readIfPresumed reads the tags of a host whose tags are still presumed,
// so that an executor checks the host's real secret: it fails while the
// host does not answer, or when the host turns out not to be ours.
func (h *Instance) readIfPresumed() error {
	h.d.mu.Lock()
	presumed, gen := h.presumed, h.gen
	h.d.mu.Unlock()
	if !presumed {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	tags, found, err := h.readTags(ctx)
	h.d.mu.Lock()
	defer h.d.mu.Unlock()
	if h.gen == gen && h.presumed {
		h.noteReadLocked(tags, found, err)
	}
	switch {
	case err != nil:
		return fmt.Errorf("sshhosts: %s: reading its tags (listed as ours from the dispatcher's store until it answers): %w", h.id, err)
	case h.presumed:
		return fmt.Errorf("sshhosts: %s: %w", h.id, ErrNotRead)
	case h.tags == nil || h.d.foreign(h.tags) != "":
		return fmt.Errorf("sshhosts: %s: not claimed by this dispatcher after all (%w)", h.id, ErrNotClaimed)
	}
	return nil
}
