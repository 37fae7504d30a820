package scheduler

import (
	"fmt"
	"maps"
	"testing"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/queue"
)

// BenchmarkSchedulerPassLabels is BenchmarkSchedulerPass with every type
// labelled and a fifth of the containers asking for a label every type
// has (so placement is the same), and one in twenty a supervisor: the cost
// of the label sets and the supervisor count, next to the plain pass.
func BenchmarkSchedulerPassLabels(b *testing.B) {
	types := make([]cloud.InstanceType, len(benchTypes))
	for i, t := range benchTypes {
		t.Labels = map[string]string{"zone": "eu", "tier": t.Name}
		types[i] = t
	}
	want := map[string]string{"zone": "eu"}
	for _, tc := range []struct{ queued, instances int }{
		{100000, 1000},
	} {
		b.Run(fmt.Sprintf("queued=%d/instances=%d", tc.queued, tc.instances), func(b *testing.B) {
			s, _ := benchSetupWith(b, tc.queued, tc.instances, types, func(i int, spec *queue.Spec) {
				if i%5 == 0 {
					spec.Scheduling.Constraints = maps.Clone(want)
				}
				spec.Scheduling.Supervisor = i%20 == 7
			})
			b.ReportAllocs()
			b.ResetTimer()
			var st Stats
			for b.Loop() {
				st = s.RunPass()
			}
			b.StopTimer()
			if st.ByState[queue.Running] == 0 || !st.AtQuota {
				b.Fatalf("unrealistic pass: %+v", st)
			}
		})
	}
}
