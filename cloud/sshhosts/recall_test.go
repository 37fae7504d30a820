package sshhosts

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/enginetest/wait"
)

// A driver that has not reached a host lists it as ours only when the
// dispatcher's store names it (RecallOwned), with presumed tags, until the
// host answers: then its own tags decide.
func TestRecalledHostListedUntilItAnswers(t *testing.T) {
	de := newDriverEnv(t, "small", "small")
	de.opts.Owner = "me"
	d := de.driver()
	ctx := context.Background()
	inst, err := d.Create(ctx, unitTypes[0], testTags("me", "s"))
	if err != nil {
		t.Fatal(err)
	}
	held := inst.ID()
	free := InstanceID(de.servers[1].addr)
	if held == free {
		free = InstanceID(de.servers[0].addr)
	}
	heldIdx := 0
	if held != InstanceID(de.servers[0].addr) {
		heldIdx = 1
	}
	de.servers[heldIdx].stop()

	fresh := de.driver() // a restarted dispatcher: has read nothing yet
	fresh.RecallOwned([]cloud.InstanceID{held, free, "no-such-host"})
	got := list(t, fresh, nil)
	if len(got) != 1 || got[0].ID() != held {
		t.Fatalf("with the held host down, a fresh driver told of it lists %v; want only %s", ids(got), held)
	}
	want := cloud.Tags{cloud.TagOwner: "me", cloud.TagInstanceType: "small"}
	if tags := got[0].Tags(); len(tags) != len(want) || tags[cloud.TagOwner] != "me" || tags[cloud.TagInstanceType] != "small" {
		t.Fatalf("presumed tags %v, want %v", tags, want)
	}
	if err := got[0].SetTags(ctx, testTags("me", "other")); !errors.Is(err, ErrNotRead) {
		t.Fatalf("SetTags on a host not read yet: %v; want ErrNotRead", err)
	}
	if _, err := fresh.Executor(got[0]); err == nil {
		t.Fatal("an executor for a host whose secret is unknown was handed out")
	}

	// Back up: its own tags, secret included, replace the presumed ones.
	de.servers[heldIdx].start()
	seen := func() string { return fmt.Sprintf("listed %v (tags %v)", ids(got), fresh.byID[held].Tags()) }
	wait.With{Seen: seen}.Until(t, "the held host, back up, listed with its own tags", 30*time.Second, func() bool {
		got = list(t, fresh, nil)
		return len(got) == 1 && got[0].ID() == held && got[0].Tags()[cloud.TagSecret] == "s"
	})
	if _, err := fresh.Executor(got[0]); err != nil {
		t.Fatalf("executor once the host answers: %v", err)
	}
	if err := inst.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
}
