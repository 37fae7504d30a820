// A full disk on the database server, with the queue in PostgreSQL: seen
// as the store being full, no start sent that the store cannot record,
// and nothing lost once there is room (docs/design.md §10.1).

package engine_test

import (
	"crypto/rand"
	"encoding/base64"
	"os"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/enginetest/fulldisk"
	"dispatch-tui/engine/enginetest/pgtest"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// incompressible returns n bytes of random base64: a record padded with it
// needs new pages of its own in the database (PostgreSQL compresses what
// it stores out of line, so repeated bytes would take next to none).
func incompressible(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n*3/4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// Containers wait in the queue and instances are idle when the database's
// disk fills up: the pass that would start them cannot write them, so
// nothing is sent to a runner, then or at any pass while the disk stays
// full; the summary says the store is full since when; once there is room
// every container runs exactly once, and a new engine on the database finds
// them all Complete.
func TestPostgresFullDiskStartsNothingUntilFreed(t *testing.T) {
	cfg := enginetest.Config(t)
	cfg.Dispatcher.MaxInstances = 4
	url, disk := pgtest.SmallDatabase(t, "32m")
	cfg.Store.URL = url
	f := enginetest.New(t, cfg, fake.Options{}, engine.Options{})

	// Four idle instances: warm-up containers that ran on them.
	var warm []string
	for range 4 {
		warm = append(warm, f.Submit(queue.Spec{Command: enginetest.Cmd(time.Second)}))
	}
	f.Until("the warm-up containers end", 60, func() bool { return allComplete(f, warm) })
	f.Until("four instances idle", 30, func() bool { return idleInstances(f) == 4 })

	// Paused, so that they wait while the disk fills; each record carries
	// 32 KiB that does not compress, so writing it Running needs room.
	if err := f.Engine.Pause("test", "fill the disk first"); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 4 {
		ids = append(ids, f.Submit(queue.Spec{Command: enginetest.Cmd(2 * time.Second), Env: map[string]string{"PAD": incompressible(t, 32<<10)}}))
	}
	filler := fulldisk.Fill(t, disk, 0)
	startsBefore := f.Cloud.Stats().Starts
	// Its own write may fit in a page with room; the pass's cannot.
	if err := f.Engine.Resume("test", "the disk is full now"); err != nil {
		t.Logf("resume on a full disk: %v", err)
	}
	f.Until("the store reports it cannot write", 20, func() bool {
		return !f.Engine.StoreHealth().UnavailableSince.IsZero()
	})
	f.Step(10)
	if n := f.Cloud.Stats().Starts - startsBefore; n != 0 {
		t.Fatalf("%d starts sent to runners while the store could not record them; want none (%s)", n, describe(f, ids))
	}
	sum := f.Engine.Summary()
	if sum.StoreErrorKind != view.StoreFull || sum.StoreUnavailableSince.IsZero() {
		t.Fatalf("summary: store error kind %q since %v (%q); want full, with a time", sum.StoreErrorKind, sum.StoreUnavailableSince, sum.StoreError)
	}
	if st := sum.StoreStatus(); !strings.HasPrefix(st, "store unavailable since ") || !strings.Contains(st, "No space left on device") ||
		!strings.Contains(st, "free space on the PostgreSQL server's disk") {
		t.Fatalf("status line %q; want store unavailable since …: … No space left on device (… free space on the PostgreSQL server's disk)", st)
	}
	if h := f.Engine.StoreHealth(); h.FailuresByKind[view.StoreFull] < 2 || h.FailuresByKind[view.StoreFull] >= 10 {
		t.Fatalf("failed writes by kind %v after 10 passes on a full disk; want full ones, retried with a growing back-off (fewer than a pass each)", h.FailuresByKind)
	}
	if n := idleInstances(f); n != 4 {
		t.Fatalf("%d idle instances while the store is full; want the 4 left idle (%s)", n, describe(f, ids))
	}
	for _, id := range ids {
		if c := f.Container(id); c.State != queue.Queued && c.State != queue.Locked {
			t.Fatalf("container %s is %s while the store cannot write; want it waiting", id, c.State)
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	f.Until("the store writes again and every container ends", 60, func() bool {
		return f.Engine.StoreHealth().UnavailableSince.IsZero() && allComplete(f, ids)
	})
	for _, id := range append(warm, ids...) {
		if n := f.Cloud.StartCount(id); n != 1 {
			t.Fatalf("container %s started %d times; want once (%v)", id, n, f.Cloud.Starts(id))
		}
	}

	// Nothing lost: a new engine on the database reads them all Complete.
	f.Close()
	g := enginetest.New(t, cfg, fake.Options{}, engine.Options{})
	if !allComplete(g, append(warm, ids...)) {
		t.Fatalf("after a restart on the database: %s", describe(g, append(warm, ids...)))
	}
}

func allComplete(f *enginetest.Env, ids []string) bool {
	for _, id := range ids {
		c, ok := f.Engine.Container(id)
		if !ok || c.State != queue.Complete || c.ExitCode == nil || *c.ExitCode != 0 {
			return false
		}
	}
	return true
}

func idleInstances(f *enginetest.Env) int {
	n := 0
	for _, v := range f.Engine.Instances() {
		if v.State == worker.StateIdle {
			n++
		}
	}
	return n
}

// describe says each container's state and reason, for a failure.
func describe(f *enginetest.Env, ids []string) string {
	var b strings.Builder
	for _, id := range ids {
		c, ok := f.Engine.Container(id)
		if !ok {
			b.WriteString(id + " missing; ")
			continue
		}
		b.WriteString(id + " " + string(c.State) + " (" + c.Reason + "); ")
	}
	return b.String()
}
