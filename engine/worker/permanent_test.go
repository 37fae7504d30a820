package worker

import (
	"errors"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
)

// A create refused for a reason retrying will not fix (cloud.PermanentError)
// stops creates for permanentBackoff, with an event naming the refusal,
// instead of retrying on every pass; creates resume after it.
func TestPermanentCreateErrorStopsCreates(t *testing.T) {
	h := newHarness(t, hopt{})
	h.step()
	h.drv.Configure(func(f *fake.Faults) { f.PermanentError = true })
	if err := h.pool.Create("small"); err != nil {
		t.Fatal(err)
	}
	h.pool.Wait()
	if !h.hasEvent("", EventCloudError, "permanent") || !h.hasEvent("", EventCloudError, "UnauthorizedOperation") {
		t.Fatalf("no cloud_error event names the refusal: %s", h.dump())
	}
	creates := h.drv.Stats().Creates
	var cr *CreateRefusedError
	for _, typ := range []string{"small", "large"} {
		if err := h.pool.Create(typ); !errors.As(err, &cr) || cr.Until != h.clk.Now().Add(permanentBackoff) {
			t.Fatalf("Create(%s) after the refusal: %v", typ, err)
		}
	}
	h.drv.Configure(func(f *fake.Faults) { f.PermanentError = false })
	h.run(permanentBackoff - time.Second)
	if err := h.pool.Create("small"); !errors.As(err, &cr) {
		t.Fatalf("Create before the back-off ends: %v", err)
	}
	if n := h.drv.Stats().Creates; n != creates {
		t.Fatalf("%d more creates reached the cloud during the back-off", n-creates)
	}
	h.run(time.Second)
	if err := h.pool.Create("small"); err != nil {
		t.Fatalf("Create after the back-off: %v", err)
	}
	h.pool.Wait()
	if got := h.pool.Stats().CloudOps["create"]["permanent"]; got != 1 {
		t.Fatalf("create errors of kind permanent: %d", got)
	}
}
