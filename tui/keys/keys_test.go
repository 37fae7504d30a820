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
		{map[string]string{"hold": "d"}, []string{`"hold"`, `"drain"`}},
		{map[string]string{"pause": "q"}, []string{`"quit"`, `"pause"`}},
		{map[string]string{"kill": "x, X"}, nil},
		{map[string]string{"drain": "+"}, nil}, // instances vs containers: no overlap
		{map[string]string{"nosuch": "x"}, []string{`"nosuch"`}},
		{map[string]string{"hold": " , "}, []string{"no key"}},
	}
	for _, tc := range tests {
		err := Validate(tc.over)
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
	km, err := New(map[string]string{"kill": "x,K", "mark": " "})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		scope Scope
		key   string
		want  string
	}{
		{Instances, "d", Drain},
		{Containers, "d", ""},
		{Containers, "+", PrioUp},
		{Instances, "+", ""},
		{Global, "x", Kill},
		{Global, "K", Kill},
		{Global, "space", Mark},
		{Global, "ctrl+c", Quit},
		{Global, "Z", ""},
	}
	for _, tc := range tests {
		if got := km.Lookup(tc.scope, Name(tc.key)); got != tc.want {
			t.Errorf("Lookup(%v, %q) = %q, want %q", tc.scope, tc.key, got, tc.want)
		}
	}
	if !km.BoundElsewhere(Name("d")) || km.BoundElsewhere(Name("Z")) {
		t.Error("BoundElsewhere wrong")
	}
}

// The footer's short help starts with quit and help (what does not fit is
// dropped from the end); read-only leaves the verbs out of both helps.
func TestHelpBindings(t *testing.T) {
	km, _ := New(map[string]string{"hold": "H"})
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
