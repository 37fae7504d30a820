package scheduler

import (
	"math"
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
		// Sizes a reserve is added to never wrap around to fit.
		{"largest ram", queue.Constraints{VCPUs: 1, RAM: math.MaxInt64}, 1.5, nil, "RAM (with reserve_extra_ram)"},
		{"ram one past overflowing with the reserve", queue.Constraints{VCPUs: 1, RAM: math.MaxInt64 - reserve + 1}, 1.5, nil, "RAM"},
		{"ram that just does not overflow", queue.Constraints{VCPUs: 1, RAM: math.MaxInt64 - reserve}, 1.5, nil, "RAM"},
		{"largest ram fitting with the reserve", queue.Constraints{VCPUs: 1, RAM: 64*gib - reserve}, 1.5, []string{"large"}, ""},
		{"one byte more", queue.Constraints{VCPUs: 1, RAM: 64*gib - reserve + 1}, 1.5, nil, "RAM"},
		{"largest vcpus", queue.Constraints{VCPUs: math.MaxInt}, 1.5, nil, "vCPUs"},
		{"largest scratch", queue.Constraints{VCPUs: 1, Scratch: math.MaxInt64}, 1.5, nil, "scratch"},
		{"largest gpus", queue.Constraints{VCPUs: 1, GPUs: math.MaxInt}, 1.5, nil, "GPUs"},
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

// TestPackingSaturates: the use already on an instance plus a huge container
// (and the reserve) saturates instead of wrapping around to room.
func TestPackingSaturates(t *testing.T) {
	reserve := int64(256) << 20
	s := &Scheduler{types: benchTypes, reserveRAM: reserve}
	for _, tc := range []struct {
		name string
		used queue.Constraints
		rc   queue.Constraints
		want bool
	}{
		{"room", queue.Constraints{VCPUs: 1, RAM: 1 << 30}, queue.Constraints{VCPUs: 1, RAM: 1 << 30}, true},
		{"ram wraps", queue.Constraints{RAM: 1 << 30}, queue.Constraints{RAM: math.MaxInt64 - reserve}, false},
		{"ram wraps with the reserve", queue.Constraints{}, queue.Constraints{RAM: math.MaxInt64 - reserve + 1}, false},
		{"vcpus wrap", queue.Constraints{VCPUs: 2}, queue.Constraints{VCPUs: math.MaxInt}, false},
		{"scratch wraps", queue.Constraints{Scratch: 1}, queue.Constraints{Scratch: math.MaxInt64}, false},
		{"gpus wrap", queue.Constraints{GPUs: 1}, queue.Constraints{GPUs: math.MaxInt}, false},
	} {
		sl := &slot{typ: 3, used: tc.used} // the gpu type: every resource non-zero
		if got := s.hasRoom(sl, tc.rc); got != tc.want {
			t.Errorf("%s: hasRoom = %v, want %v", tc.name, got, tc.want)
		}
		addUse(&sl.used, tc.rc, reserve)
		if sl.used.VCPUs < tc.used.VCPUs || sl.used.RAM < tc.used.RAM || sl.used.Scratch < tc.used.Scratch || sl.used.GPUs < tc.used.GPUs {
			t.Errorf("%s: use went down from %+v to %+v", tc.name, tc.used, sl.used)
		}
	}
}
