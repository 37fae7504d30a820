//go:build linux

package ec2_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2/ec2test"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/worker"
)

// The two-minute notice, end to end: EC2 posts it under a running
// container; the engine reads it with its probes over SSH and drains the
// instance at once (nothing new goes there) while the container goes on;
// when EC2 reclaims the instance the container is requeued without
// spending an attempt and completes elsewhere. The notice's lead is short
// here; EC2's is two minutes.
func TestEngineSpotNotice(t *testing.T) {
	srv := ec2test.Start(t, ec2test.Options{ShutdownTime: time.Second})
	srv.Configure(func(f *ec2test.Faults) { f.SpotNotice = 4 * time.Second })
	eng := engineOn(t, srv, func(cfg *config.Config) {
		cfg.InstanceTypes = []cloud.InstanceType{{Name: "spot", ProviderType: "t3.small", VCPUs: 2, RAM: 2 << 30, Price: 0.01, Preemptible: true}}
		// A notice seen only through the listing would come too late.
		cfg.Cloud.SyncInterval = time.Hour
	})
	// The first attempt waits to be interrupted; the next one ends.
	marker := filepath.Join(t.TempDir(), "first-attempt")
	preemptible := true
	c, err := eng.Submit(queue.Spec{
		Command:            []string{"sh", "-c", `if [ -e "$M" ]; then echo done; else touch "$M"; sleep 120; fi`},
		Env:                map[string]string{"M": marker},
		RuntimeConstraints: queue.Constraints{VCPUs: 2, RAM: 256 << 20},
		Scheduling:         queue.Scheduling{Preemptible: &preemptible},
	}, "test")
	if err != nil {
		t.Fatal(err)
	}
	dump := func() string {
		var b strings.Builder
		got, _ := eng.Container(c.ID)
		fmt.Fprintf(&b, "\n  container %s on %s attempts %d reason %q; live %v", got.State, got.InstanceID, got.Attempts, got.Reason, srv.Live())
		for _, v := range eng.Instances() {
			fmt.Fprintf(&b, "\n  instance %s %s %s containers=%v", v.ID, v.State, v.IdleBehavior, v.Containers)
		}
		if evs, err := eng.Events(0, 100000); err == nil {
			for _, ev := range evs[max(0, len(evs)-20):] {
				fmt.Fprintf(&b, "\n  event %+v", ev)
			}
		}
		return b.String()
	}
	stepping(eng, dump).Until(t, "the container running", 30*time.Second, func() bool {
		got, _ := eng.Container(c.ID)
		return got.State == queue.Running
	})
	first, _ := eng.Container(c.ID)
	if err := srv.Interrupt(first.InstanceID); err != nil {
		t.Fatal(err)
	}
	stepping(eng, dump).Until(t, "the instance drained on the notice", 20*time.Second, func() bool {
		v, ok := eng.Instance(first.InstanceID)
		return ok && v.IdleBehavior == worker.IdleDrain
	})
	if got, _ := eng.Container(c.ID); got.State != queue.Running || got.InstanceID != first.InstanceID {
		t.Fatalf("the notice stopped the container before EC2 did:%s", dump())
	}
	for _, in := range srv.Instances() {
		if in.ID == first.InstanceID && (in.State == "shutting-down" || in.State == "terminated") {
			t.Fatalf("the instance was %s when its notice was read: too late to tell the notice did it", in.State)
		}
	}
	stepping(eng, dump).Until(t, "the container complete", 60*time.Second, func() bool {
		got, _ := eng.Container(c.ID)
		return got.State.Final()
	})
	got, _ := eng.Container(c.ID)
	if got.State != queue.Complete || got.InstanceID == first.InstanceID || got.Attempts != first.Attempts {
		t.Fatalf("after the interruption:%s", dump())
	}
}
