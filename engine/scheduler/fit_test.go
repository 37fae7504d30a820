package scheduler

import (
	"slices"
	"strings"
	"testing"

	"dispatch-tui/engine/queue"
)

func TestComputeFit(t *testing.T) {
	const gib = int64(1) << 30
	reserve := int64(256) << 20
	for _, tc := range []struct {
		name   string
		rc     queue.Constraints
		factor float64
		want   []string
		why    string
	}{
		{"small fits small, medium is beyond 1.5x", queue.Constraints{VCPUs: 1, RAM: gib}, 1.5, []string{"small"}, ""},
		{"factor 4 admits medium", queue.Constraints{VCPUs: 1, RAM: gib}, 4, []string{"small", "medium"}, ""},
		{"reserve pushes 2GiB to medium", queue.Constraints{VCPUs: 1, RAM: 2 * gib}, 1.5, []string{"medium"}, ""},
		{"needs gpu", queue.Constraints{VCPUs: 1, GPUs: 1}, 1.5, []string{"gpu"}, ""},
		{"too much ram", queue.Constraints{VCPUs: 1, RAM: 100 * gib}, 1.5, nil, "largest is 64GiB"},
		{"too many vcpus", queue.Constraints{VCPUs: 99}, 1.5, nil, "needs 99 vCPUs, largest is 16"},
		{"too many gpus", queue.Constraints{VCPUs: 1, GPUs: 2}, 1.5, nil, "needs 2 GPUs"},
		{"no single type", queue.Constraints{VCPUs: 16, RAM: 60 * gib, GPUs: 1}, 1.5, nil, "no single type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := ComputeFit(benchTypes, tc.rc, reserve, tc.factor)
			var got []string
			for _, i := range f.Candidates {
				got = append(got, benchTypes[i].Name)
			}
			if !slices.Equal(got, tc.want) || !strings.Contains(f.Why, tc.why) || (tc.want == nil) != (f.Why != "") {
				t.Fatalf("got %v %q, want %v with reason containing %q", got, f.Why, tc.want, tc.why)
			}
		})
	}
}
