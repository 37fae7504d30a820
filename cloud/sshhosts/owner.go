// Whose claim a host carries; another dispatcher's hosts reported and left alone.

package sshhosts

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"dispatch-tui/cloud"
)

// Ownership: whose claim a host carries, and how another dispatcher's
// hosts are reported and left alone.

// ClaimedError reports a host claimed by another dispatcher.
type ClaimedError struct{ Owner string }

func (e *ClaimedError) Error() string {
	return "host claimed by " + e.Owner + ", not by this dispatcher"
}

// foreign returns the owner named by tags when it is another dispatcher's,
// else "". Without Options.Owner nothing is foreign.
func (d *Driver) foreign(tags cloud.Tags) string {
	if d.opts.Owner == "" || tags == nil {
		return ""
	}
	o := tags[cloud.TagOwner]
	if o == d.opts.Owner || (d.opts.LegacyOwner != "" && o == d.opts.LegacyOwner) {
		return ""
	}
	if o == "" {
		return "an unknown owner"
	}
	return o
}

// foreignOwnerLocked is the other dispatcher holding h as last seen, or "".
func (h *Instance) foreignOwnerLocked() string {
	if !h.claimed {
		return ""
	}
	return h.d.foreign(h.tags)
}

// holder reads who holds a host whose claim just failed: its owner tag
// ("" when it cannot be read) and its tags (nil then).
func (h *Instance) holder(ctx context.Context) (string, cloud.Tags) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	tags, found, err := h.readTags(ctx)
	if err != nil || !found {
		return "", nil
	}
	if o := tags[cloud.TagOwner]; o != "" {
		return o, tags
	}
	return "an unknown owner", tags
}

// describeTaken renders the hosts claimed elsewhere for a capacity error:
// ", 2 claimed by dt-1a2b3c4d".
func describeTaken(takenBy map[string]int) string {
	owners := make([]string, 0, len(takenBy))
	for o := range takenBy {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	var b strings.Builder
	for _, o := range owners {
		if o == "" {
			fmt.Fprintf(&b, ", %d claimed elsewhere", takenBy[o])
		} else {
			fmt.Fprintf(&b, ", %d claimed by %s", takenBy[o], o)
		}
	}
	return b.String()
}
