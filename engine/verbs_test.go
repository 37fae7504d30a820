package engine

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
)

func TestParseVerbs(t *testing.T) {
	for _, tc := range []struct {
		name string
		want InstanceVerb
	}{{"hold", InstanceHold}, {"drain", InstanceDrain}, {"run", InstanceRun}, {"kill", InstanceKill}} {
		got, err := ParseInstanceVerb(tc.name)
		if err != nil || got != tc.want || got.String() != tc.name {
			t.Errorf("ParseInstanceVerb(%q) = %v (%d), %v; want %d", tc.name, got, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		want ContainerVerb
	}{{"hold", ContainerHold}, {"release", ContainerRelease}, {"kill", ContainerKill}} {
		got, err := ParseContainerVerb(tc.name)
		if err != nil || got != tc.want || got.String() != tc.name {
			t.Errorf("ParseContainerVerb(%q) = %v (%d), %v; want %d", tc.name, got, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		parse func() error
		want  string
	}{
		{func() error { _, err := ParseInstanceVerb("reboot"); return err }, `unknown instance verb "reboot" (hold, drain, run or kill)`},
		{func() error { _, err := ParseInstanceVerb("release"); return err }, `unknown instance verb "release" (hold, drain, run or kill)`},
		{func() error { _, err := ParseContainerVerb("drain"); return err }, `unknown container verb "drain" (hold, release or kill)`},
		{func() error { _, err := ParseContainerVerb(""); return err }, `unknown container verb "" (hold, release or kill)`},
	} {
		err := tc.parse()
		var uv *UnknownVerbError
		if !errors.As(err, &uv) || err.Error() != tc.want {
			t.Errorf("got %v, want *UnknownVerbError %q", err, tc.want)
		}
	}
}

// A typed verb outside the constants is refused, not applied as another.
func TestApplyUnknownVerbValue(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	c := h.submit(time.Minute, 0)
	var uv *UnknownVerbError
	if _, err := h.eng.ApplyContainerVerb(c, ContainerVerb(0), "test", ""); !errors.As(err, &uv) {
		t.Fatalf("ContainerVerb(0): got %v, want *UnknownVerbError", err)
	}
	if _, err := h.eng.ApplyInstanceVerb("i-any", InstanceVerb(99), "test", ""); !errors.As(err, &uv) || uv.Verb != "InstanceVerb(99)" {
		t.Fatalf("InstanceVerb(99): got %v, want *UnknownVerbError naming it", err)
	}
}

// Each typed verb does what its name says.
func TestApplyVerbs(t *testing.T) {
	h := newHarness(t, testConfig(t), fake.Options{})
	inst := idleInstance(h)
	for _, tc := range []struct {
		v    InstanceVerb
		want worker.IdleBehavior
	}{{InstanceHold, worker.IdleHold}, {InstanceRun, worker.IdleRun}, {InstanceDrain, worker.IdleDrain}, {InstanceRun, worker.IdleRun}} {
		v, err := h.eng.ApplyInstanceVerb(inst, tc.v, "test", "")
		if err != nil || v.IdleBehavior != tc.want {
			t.Fatalf("%s: behaviour %s, err %v; want %s", tc.v, v.IdleBehavior, err, tc.want)
		}
	}
	c := h.submit(time.Hour, 0)
	if got, err := h.eng.ApplyContainerVerb(c, ContainerHold, "test", ""); err != nil || !got.Held {
		t.Fatalf("hold: %+v, %v", got, err)
	}
	if got, err := h.eng.ApplyContainerVerb(c, ContainerRelease, "test", ""); err != nil || got.Held {
		t.Fatalf("release: %+v, %v", got, err)
	}
	if got, err := h.eng.ApplyContainerVerb(c, ContainerKill, "test", ""); err != nil || got.State != queue.Cancelled {
		t.Fatalf("kill: %+v, %v", got, err)
	}
	if v, err := h.eng.ApplyInstanceVerb(inst, InstanceKill, "test", "retire"); err != nil || v.State != worker.StateShutdown {
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
