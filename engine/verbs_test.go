package engine

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
	"dispatch-tui/engine/worker"
)

// A typed verb outside the constants is refused, not applied as another.
func TestApplyUnknownVerbValue(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	c := h.submit(time.Minute, 0)
	var uv *view.UnknownVerbError
	if _, err := h.eng.ApplyContainerVerb(c, view.ContainerVerb(0), "test", ""); !errors.As(err, &uv) {
		t.Fatalf("ContainerVerb(0): got %v, want *view.UnknownVerbError", err)
	}
	if _, err := h.eng.ApplyInstanceVerb("i-any", view.InstanceVerb(99), "test", ""); !errors.As(err, &uv) || uv.Verb != "InstanceVerb(99)" {
		t.Fatalf("InstanceVerb(99): got %v, want *view.UnknownVerbError naming it", err)
	}
}

// Each typed verb does what its name says.
func TestApplyVerbs(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	inst := idleInstance(h)
	for _, tc := range []struct {
		v    view.InstanceVerb
		want worker.IdleBehavior
	}{{view.InstanceHold, worker.IdleHold}, {view.InstanceRun, worker.IdleRun}, {view.InstanceDrain, worker.IdleDrain}, {view.InstanceRun, worker.IdleRun}} {
		v, err := h.eng.ApplyInstanceVerb(inst, tc.v, "test", "")
		if err != nil || v.IdleBehavior != tc.want {
			t.Fatalf("%s: behaviour %s, err %v; want %s", tc.v, v.IdleBehavior, err, tc.want)
		}
	}
	c := h.submit(time.Hour, 0)
	if got, err := h.eng.ApplyContainerVerb(c, view.ContainerHold, "test", ""); err != nil || !got.Held {
		t.Fatalf("hold: %+v, %v", got, err)
	}
	if got, err := h.eng.ApplyContainerVerb(c, view.ContainerRelease, "test", ""); err != nil || got.Held {
		t.Fatalf("release: %+v, %v", got, err)
	}
	if got, err := h.eng.ApplyContainerVerb(c, view.ContainerKill, "test", ""); err != nil || got.State != queue.Cancelled {
		t.Fatalf("kill: %+v, %v", got, err)
	}
	if v, err := h.eng.ApplyInstanceVerb(inst, view.InstanceKill, "test", "retire"); err != nil || v.State != worker.StateShutdown {
		t.Fatalf("kill instance: state %s, err %v", v.State, err)
	}
}

// Submit and SubmitBatch refuse the same unfittable spec with the same
// NoFitError; the batch only adds the spec's index.
func TestSubmitAndSubmitBatchRefuseAlike(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	fits := queue.Spec{Command: []string{"true"}, RuntimeConstraints: queue.Constraints{VCPUs: 1}}
	for _, rc := range []queue.Constraints{
		{VCPUs: 1, RAM: 64 * gib},
		{VCPUs: 64},
		{VCPUs: 1, GPUs: 1},
	} {
		bad := queue.Spec{Command: []string{"true"}, RuntimeConstraints: rc}
		_, one := h.eng.Submit(bad, "test")
		_, batch := h.eng.SubmitBatch([]queue.Spec{fits, bad}, "test")
		var nfOne, nfBatch *NoFitError
		if !errors.As(one, &nfOne) || !errors.As(batch, &nfBatch) {
			t.Fatalf("%+v: Submit %v, SubmitBatch %v; want *NoFitError from both", rc, one, batch)
		}
		if !reflect.DeepEqual(nfOne, nfBatch) {
			t.Errorf("%+v: NoFitErrors differ:\n Submit      %+v\n SubmitBatch %+v", rc, nfOne, nfBatch)
		}
		if want := "container 1: " + one.Error(); batch.Error() != want {
			t.Errorf("SubmitBatch error %q, want %q", batch.Error(), want)
		}
		if !strings.Contains(one.Error(), "large (8 vCPU, 32GiB RAM") {
			t.Errorf("Submit error %q does not describe the types", one)
		}
	}
	if total, _ := h.eng.queue.Len(); total != 0 {
		t.Fatalf("refused submits stored %d containers", total)
	}
}

// TestBulkSelectorAcrossChunks: a selector's walk takes the queue's lock a
// chunk at a time (selectIDs); its pages still hold every match once, in
// submission order, across the chunks' edges.
func TestBulkSelectorAcrossChunks(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	n := 2*selectChunk + 700
	specs := make([]queue.Spec, n)
	for i := range specs {
		specs[i] = queue.Spec{Command: []string{"true"}, Labels: map[string]string{"g": strconv.Itoa(i % 3)},
			RuntimeConstraints: queue.Constraints{VCPUs: 1}}
	}
	cs, err := h.eng.SubmitBatch(specs, "test")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i, c := range cs {
		if i%3 == 1 {
			want = append(want, c.ID)
		}
	}
	prio := 7
	req := BulkRequest{Verb: view.ContainerPriority, Priority: &prio, Filter: &ListOptions{Labels: map[string]string{"g": "1"}}}
	var got []string
	for pages := 1; ; pages++ {
		out, err := h.eng.Bulk(req)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Results {
			got = append(got, r.ID)
		}
		if !out.More {
			if pages != 2 {
				t.Errorf("%d pages for %d matches, want 2 of at most %d", pages, len(want), BulkBatch)
			}
			break
		}
		req.From = out.Next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the pages changed %d containers, want the %d labelled g=1 in submission order (first differences: %v)", len(got), len(want), firstDiff(got, want))
	}
}

// firstDiff is where two id lists part, for a failure message.
func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("at %d: %s against %s", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(a), len(b))
}
