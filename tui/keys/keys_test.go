package keys

import (
	"strings"
	"testing"
)

// check-config calls Validate: what the console would refuse at start-up
// is refused there, naming both actions.
func TestValidate(t *testing.T) {
	tests := []struct {
		over    map[string]string
		wantErr []string
	}{
		{nil, nil},
		{map[string]string{"hold": "H"}, nil},
		{map[string]string{"hold": "D"}, []string{`"hold"`, `"drain"`}},
		{map[string]string{"hold": "d"}, []string{`"hold"`, `"details"`}},
		{map[string]string{"wrap": "h"}, nil}, // the pager vs the tables: no overlap
		{map[string]string{"pause": "q"}, []string{`"quit"`, `"pause"`}},
		{map[string]string{"kill": "x, X"}, nil},
		{map[string]string{"drain": "+"}, nil}, // instances vs containers: no overlap
		{map[string]string{"nosuch": "x"}, []string{`"nosuch"`}},
		{map[string]string{"hold": " , "}, []string{"no key"}},
	}
	for _, tc := range tests {
		err := Validate(tc.over, nil)
		if (err != nil) != (tc.wantErr != nil) {
			t.Errorf("%v: err = %v", tc.over, err)
			continue
		}
		for _, w := range tc.wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not name %s", tc.over, err, w)
			}
		}
	}
}

func TestLookupByScope(t *testing.T) {
	km, err := New(map[string]string{"kill": "x,K", "mark": " "}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		scope Scope
		key   string
		want  string
	}{
		{Instances, "D", Drain},
		{Containers, "D", ""},
		{Containers, "d", Details},
		{Containers, "+", PrioUp},
		{Instances, "+", ""},
		{Tables, "x", Kill},
		{Tables, "K", Kill},
		{Tables, "space", Mark},
		{Tables, "ctrl+c", Quit},
		{Tables, "Z", ""},
		{Pager, "K", ""}, // no verb on the screens over the tables
		{Pager, "h", ""},
		{Pager, "n", Search},
		{Tables, "n", ""},
	}
	for _, tc := range tests {
		if got := km.Lookup(tc.scope, Name(tc.key)); got != tc.want {
			t.Errorf("Lookup(%v, %q) = %q, want %q", tc.scope, tc.key, got, tc.want)
		}
	}
	if !km.BoundElsewhere(Name("D")) || km.BoundElsewhere(Name("Z")) {
		t.Error("BoundElsewhere wrong")
	}
}

// The footer's short help starts with quit and help (what does not fit is
// dropped from the end); read-only leaves the verbs out of both helps.
func TestHelpBindings(t *testing.T) {
	km, _ := New(map[string]string{"hold": "H"}, nil)
	for _, ro := range []bool{false, true} {
		short := km.Short(Instances, ro)
		if short[0].Help().Desc != "quit" || short[1].Help().Desc != "help" {
			t.Errorf("short help starts %q %q", short[0].Help().Desc, short[1].Help().Desc)
		}
		var words []string
		for _, b := range short {
			words = append(words, b.Help().Key+" "+b.Help().Desc)
		}
		got := strings.Join(words, ",")
		if strings.Contains(got, "H hold") == ro || strings.Contains(got, "prio") {
			t.Errorf("readOnly %v: short help %s", ro, got)
		}
		verbs := false
		for _, s := range km.Full(ro) {
			for _, b := range s.Bindings {
				if strings.Contains(b.Help().Desc, "kill") {
					verbs = true
				}
			}
		}
		if verbs == ro {
			t.Errorf("readOnly %v: full help lists verbs: %v", ro, verbs)
		}
	}
}

// A key a view's sort takes is refused where its action applies, and only
// there.
func TestReservedSortKeys(t *testing.T) {
	res := Reserved{Instances: {"H": "it sorts by HOST in the instances view"}, Tables: {"V": "it sorts by VCPU in the types view"}}
	tests := []struct {
		over    map[string]string
		wantErr []string
	}{
		{map[string]string{"hold": "H"}, []string{`"H"`, `"hold"`, "HOST"}},
		{map[string]string{"drain": "H"}, []string{"HOST"}},
		{map[string]string{"priority": "H"}, nil}, // containers: H sorts nothing there
		{map[string]string{"hold": "V"}, []string{"VCPU"}},
		{map[string]string{"priority": "V"}, nil},
		{map[string]string{"wrap": "H"}, nil}, // the pager: no sorts
	}
	for _, tc := range tests {
		err := Validate(tc.over, res)
		if (err != nil) != (tc.wantErr != nil) {
			t.Errorf("%v: err = %v", tc.over, err)
			continue
		}
		for _, w := range tc.wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not name %s", tc.over, err, w)
			}
		}
	}
}
