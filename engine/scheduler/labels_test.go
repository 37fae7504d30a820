package scheduler

import (
	"slices"
	"testing"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/queue"
)

func TestLabelledFit(t *testing.T) {
	types := []cloud.InstanceType{
		{Name: "small", VCPUs: 1, RAM: 2 << 30, Price: 1, Labels: map[string]string{"disk": "ssd"}},
		{Name: "eu-small", VCPUs: 1, RAM: 2 << 30, Price: 1.2, Labels: map[string]string{"zone": "eu"}},
		{Name: "eu-big", VCPUs: 8, RAM: 32 << 30, Price: 4, Labels: map[string]string{"zone": "eu", "gpu": "a100"}},
		{Name: "us-big", VCPUs: 8, RAM: 32 << 30, Price: 3, Labels: map[string]string{"zone": "us", "gpu": "a100"}},
	}
	li := newLabelIndex(types)
	small := queue.Constraints{VCPUs: 1, RAM: 1 << 30}
	big := queue.Constraints{VCPUs: 4, RAM: 16 << 30}
	for _, tc := range []struct {
		name     string
		labels   map[string]string
		rc       queue.Constraints
		want     []string
		noLabels bool
	}{
		{"none: every type, cheapest first within the factor", nil, small, []string{"small", "eu-small"}, false},
		{"zone=eu: only types with it", map[string]string{"zone": "eu"}, small, []string{"eu-small"}, false},
		{"price factor among the labelled types", map[string]string{"gpu": "a100"}, small, []string{"us-big", "eu-big"}, false},
		{"both labels", map[string]string{"gpu": "a100", "zone": "eu"}, big, []string{"eu-big"}, false},
		{"labelled but too big", map[string]string{"zone": "eu"}, queue.Constraints{VCPUs: 64}, nil, false},
		{"a value no type has", map[string]string{"zone": "ap"}, small, nil, true},
		{"pairs each on some type, never together", map[string]string{"disk": "ssd", "zone": "eu"}, small, nil, true},
		{"known pairs on different types", map[string]string{"zone": "us", "gpu": "a100"}, small, []string{"us-big"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Sorted by price as the config keeps them.
			sorted := slices.Clone(types)
			slices.SortStableFunc(sorted, func(a, b cloud.InstanceType) int {
				switch {
				case a.Price < b.Price:
					return -1
				case a.Price > b.Price:
					return 1
				}
				return 0
			})
			sli := newLabelIndex(sorted)
			want := sli.setOf(tc.labels)
			f, noLabels := computeLabelledFit(sorted, &sli, tc.rc, want, 0, 1.5)
			var got []string
			for _, c := range f.Candidates {
				got = append(got, sorted[c].Name)
			}
			if !slices.Equal(got, tc.want) || noLabels != tc.noLabels {
				t.Fatalf("candidates %v noLabels %v, want %v %v (why %q)", got, noLabels, tc.want, tc.noLabels, f.Why)
			}
			if len(tc.want) == 0 && !tc.noLabels && f.Why == "" {
				t.Fatal("no candidates and no explanation")
			}
		})
	}
	if li.setOf(nil) != 0 || li.setOf(map[string]string{"zone": "mars"}) != unknownLabel {
		t.Fatal("empty labels must be the empty set, unknown ones the unknown bit")
	}
}
