package cloud

import (
	"sync"
	"testing"
)

// TestDescribedCopies holds the getters to copies: a caller that changes
// the tags it was handed does not change the instance's.
func TestDescribedCopies(t *testing.T) {
	var s Described[int]
	s.Init("i-1", Description[int]{ProviderType: "m5.large", Address: "10.0.0.1:22", State: "running", Tags: Tags{"k": "v"}, Extra: 7})
	s.Tags()["k"] = "changed"
	snap := s.Snapshot()
	snap.Tags["k"] = "changed too"
	if got := s.Tags()["k"]; got != "v" {
		t.Fatalf("tags after changing copies: k=%q, want v", got)
	}
	if s.ID() != "i-1" || s.ProviderType() != "m5.large" || s.Address() != "10.0.0.1:22" || s.State() != "running" || snap.Extra != 7 {
		t.Fatalf("getters: %s %s %s %s %d", s.ID(), s.ProviderType(), s.Address(), s.State(), snap.Extra)
	}
	if got, want := s.String(), "i-1 (m5.large @ 10.0.0.1:22)"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

// TestDescribedOneDescription has readers and an updater race (under
// -race): a reader sees one whole description, never half of two.
func TestDescribedOneDescription(t *testing.T) {
	var s Described[int]
	s.Init("i-1", Description[int]{State: "0", Extra: 0})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; n <= 1000; n++ {
			s.Update(func(d *Description[int]) { d.State, d.Extra = string(rune('0'+n%10)), n%10 })
		}
	}()
	for range 1000 {
		d := s.Snapshot()
		if d.State != string(rune('0'+d.Extra)) {
			t.Fatalf("snapshot has state %q with extra %d: torn", d.State, d.Extra)
		}
	}
	wg.Wait()
}
