//go:build linux

package sshhosts

import (
	"context"
	"strings"
	"testing"

	"dispatch-tui/cloud"
)

// TestChangedHostKeyRefusedVisiblyAndFixedWithoutRestart: a host of ours
// whose key changed while the dispatcher was down is listed by no listing,
// but reported refused with the key error; once known_hosts is fixed, the
// same driver (no restart) reads it again and lists it.
func TestChangedHostKeyRefusedVisiblyAndFixedWithoutRestart(t *testing.T) {
	de := newDriverEnv(t, "small")
	owner := cloud.Tags{cloud.TagOwner: "me"}
	first := de.driver()
	inst, err := first.Create(context.Background(), unitTypes[0], testTags("me", "s-a"))
	if err != nil {
		t.Fatal(err)
	}
	first.Stop()

	de.servers[0].restartWithNewKey()
	d := de.driver() // the dispatcher's restart
	if got := list(t, d, owner); len(got) != 0 {
		t.Fatalf("host with a changed key listed: %v", ids(got))
	}
	refused := d.Refused()
	if len(refused) != 1 || refused[0].ID != inst.ID() || refused[0].Address != de.servers[0].addr ||
		refused[0].InstanceType != "small" || !strings.Contains(refused[0].Err, "host key") {
		t.Fatalf("Refused() = %+v, want host 0 with the host key error", refused)
	}
	if _, err := d.Create(context.Background(), unitTypes[0], testTags("me", "s-b")); err == nil || !strings.Contains(err.Error(), "host key") {
		t.Fatalf("create on the refused host: %v, want a capacity error naming the host key", err)
	}

	de.writeKnownHosts(de.servers[0]) // the operator accepts the new key
	got := list(t, d, owner)
	if len(got) != 1 || got[0].ID() != inst.ID() {
		t.Fatalf("after fixing known_hosts: listed %v, want %s", ids(got), inst.ID())
	}
	if r := d.Refused(); len(r) != 0 {
		t.Fatalf("still refused after fixing known_hosts: %+v", r)
	}
}
