package statediagram

import (
	"slices"
	"strings"
	"testing"
)

var states = []string{"a", "b", "c"}

func TestParse(t *testing.T) {
	d, err := Parse("t.txt", `' a comment
@startuml
' inside too
[*] --> a : made
a --> b : step
b --> c : last: with a colon
@enduml
`, states)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allows(Entering, "a") || !d.Allows("a", "b") || d.Allows("b", "a") || d.Allows("a", "c") {
		t.Errorf("Allows disagrees with the text: %v", d.Transitions())
	}
	if got := d.Cause("b", "c"); got != "last: with a colon" {
		t.Errorf("cause %q", got)
	}
	if got := d.Next("a"); !slices.Equal(got, []string{"b"}) {
		t.Errorf("Next(a) = %v", got)
	}
	r := d.Reachable(Entering)
	for _, s := range states {
		if !r[s] {
			t.Errorf("%s not reachable from [*]: %v", s, r)
		}
	}
	if r := d.Reachable("c"); len(r) != 1 {
		t.Errorf("c reaches %v, want only itself", r)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"outside", "a --> b : x\n", "t.txt:1: \"a --> b : x\" outside @startuml"},
		{"no cause", "@startuml\na --> b\n@enduml\n", "t.txt:2: want \"FROM --> TO : cause\""},
		{"empty cause", "@startuml\na --> b :\n@enduml\n", "want \"FROM --> TO : cause\""},
		{"no arrow", "@startuml\na -> b : x\n@enduml\n", "want \"FROM --> TO : cause\""},
		{"typo", "@startuml\nd --> b : x\n@enduml\n", "unknown state"},
		{"to [*]", "@startuml\na --> [*] : x\n@enduml\n", "unknown state"},
		{"twice", "@startuml\na --> b : x\na --> b : y\n@enduml\n", "t.txt:3: a --> b listed twice"},
		{"unclosed", "@startuml\na --> b : x\n", "t.txt: no @enduml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.txt", tc.text, states)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestBody(t *testing.T) {
	text := "' between @startuml and @enduml, a comment\n@startuml\n[*] --> a : made\n@enduml\n"
	if got, want := Body(text), "@startuml\n[*] --> a : made\n@enduml"; got != want {
		t.Errorf("Body = %q, want %q", got, want)
	}
	if got := Body("no diagram"); got != "" {
		t.Errorf("Body of no diagram = %q", got)
	}
}
