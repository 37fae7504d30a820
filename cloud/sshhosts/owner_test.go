//go:build linux

package sshhosts

import (
	"context"
	"errors"
	"strings"
	"testing"

	"dispatch-tui/cloud"
)

// A host claimed by another dispatcher is reported "claimed by <id>" and is
// never retagged or released by this one, even through an Instance it
// once held; a host of our own is released as usual.
func TestForeignClaimsAreLeftAlone(t *testing.T) {
	de := newDriverEnv(t, "small", "small")
	ctx := context.Background()
	small := unitTypes[0]
	de.opts.Owner = "dt-aaaa"
	ours := de.driver()
	de.opts.Owner = "dt-bbbb"
	theirs := de.driver()

	mine, err := ours.Create(ctx, small, testTags("dt-aaaa", "s-a"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := theirs.Create(ctx, small, testTags("dt-bbbb", "s-b"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ours.Create(ctx, small, testTags("dt-aaaa", "s-c"))
	if _, ok := cloud.AsCapacity(err); !ok || !strings.Contains(err.Error(), "1 claimed by dt-bbbb") {
		t.Fatalf("create with every host taken: %v, want a capacity error saying 1 claimed by dt-bbbb", err)
	}
	if got := ids(list(t, ours, cloud.Tags{cloud.TagOwner: "dt-aaaa"})); len(got) != 1 || got[0] != string(mine.ID()) {
		t.Fatalf("our listing: %v, want only %s", got, mine.ID())
	}

	// Our driver's handle on the other dispatcher's host: no retag, no release.
	var foreign cloud.Instance
	for _, i := range list(t, ours, nil) {
		if i.ID() == other.ID() {
			foreign = i
		}
	}
	if foreign == nil {
		t.Fatalf("the unfiltered listing lacks %s", other.ID())
	}
	var ce *ClaimedError
	if err := foreign.SetTags(ctx, testTags("dt-aaaa", "s-x")); !errors.As(err, &ce) || ce.Owner != "dt-bbbb" {
		t.Fatalf("SetTags on another dispatcher's host: %v, want ClaimedError by dt-bbbb", err)
	}
	if err := foreign.Destroy(ctx); !errors.As(err, &ce) || ce.Owner != "dt-bbbb" {
		t.Fatalf("Destroy of another dispatcher's host: %v, want ClaimedError by dt-bbbb", err)
	}
	if s, _, ok := readFileOnHost(t, de.workDirs[1], SecretFile); !ok || strings.TrimSpace(s) != "s-b" {
		t.Fatalf("the other dispatcher's claim changed: secret %q (exists %v)", s, ok)
	}

	// Released by us, then claimed by them and seen so by our driver's
	// listing: a late Destroy through our old handle (a retry) must not
	// release their claim.
	if err := mine.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	list(t, theirs, nil)
	if _, err := theirs.Create(ctx, small, testTags("dt-bbbb", "s-d")); err != nil {
		t.Fatal(err)
	}
	list(t, ours, nil)
	if err := mine.Destroy(ctx); err != nil && !errors.As(err, &ce) {
		t.Fatalf("stale Destroy: %v", err)
	}
	if s, _, ok := readFileOnHost(t, de.workDirs[0], SecretFile); !ok || strings.TrimSpace(s) != "s-d" {
		t.Fatalf("a stale Destroy released the other dispatcher's claim: secret %q (exists %v)", s, ok)
	}
}
