// Package statediagram reads the executable state diagrams kept beside the
// state machines (engine/queue/states.txt for containers,
// engine/worker/states.txt for instances): PlantUML state-diagram text that
// is both the picture in docs/design.md and the table of allowed changes.
package statediagram

import (
	"fmt"
	"strings"
)

// Entering stands for "[*]" in a diagram: the state of a thing before it
// exists. A change may start there; none may end there.
const Entering = ""

// Transition is a change from one state to another.
type Transition struct{ From, To string }

// Diagram is a parsed state diagram: its states and the changes it allows,
// each with its cause.
type Diagram struct {
	name   string
	states []string
	causes map[Transition]string
}

// Parse reads text, the diagram called name (for errors). Outside
// "@startuml … @enduml" only blank lines and comments (lines starting with
// ') may appear; inside, each other line is "FROM --> TO : cause". Only
// the given states and "[*]" (as FROM) are accepted, so a typo is an error
// rather than a change that never matches.
func Parse(name, text string, states []string) (*Diagram, error) {
	known := map[string]string{"[*]": Entering}
	for _, s := range states {
		known[s] = s
	}
	d := &Diagram{name: name, states: states, causes: make(map[Transition]string)}
	inside := false
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "'"):
			continue
		case line == "@startuml":
			inside = true
			continue
		case line == "@enduml":
			inside = false
			continue
		case !inside:
			return nil, fmt.Errorf("%s:%d: %q outside @startuml ... @enduml", name, n+1, line)
		}
		arrow, cause, ok := strings.Cut(line, ":")
		from, to, ok2 := strings.Cut(arrow, "-->")
		cause = strings.TrimSpace(cause)
		if !ok || !ok2 || cause == "" {
			return nil, fmt.Errorf("%s:%d: want \"FROM --> TO : cause\", got %q", name, n+1, line)
		}
		f, okf := known[strings.TrimSpace(from)]
		t, okt := known[strings.TrimSpace(to)]
		if !okf || !okt || t == Entering {
			return nil, fmt.Errorf("%s:%d: unknown state in %q", name, n+1, line)
		}
		tr := Transition{f, t}
		if _, dup := d.causes[tr]; dup {
			return nil, fmt.Errorf("%s:%d: %s --> %s listed twice", name, n+1, Name(f), Name(t))
		}
		d.causes[tr] = cause
	}
	if inside {
		return nil, fmt.Errorf("%s: no @enduml", name)
	}
	return d, nil
}

// MustParse is Parse for a diagram embedded in the binary, which its
// package's tests parse: an error there is a build that must not ship.
func MustParse(name, text string, states []string) *Diagram {
	d, err := Parse(name, text, states)
	if err != nil {
		panic(err)
	}
	return d
}

// Allows reports whether the diagram lists the change from → to.
func (d *Diagram) Allows(from, to string) bool {
	_, ok := d.causes[Transition{from, to}]
	return ok
}

// Cause is the cause the diagram gives for from → to ("" if not listed).
func (d *Diagram) Cause(from, to string) string { return d.causes[Transition{from, to}] }

// Transitions returns every listed change (in no particular order).
func (d *Diagram) Transitions() []Transition {
	out := make([]Transition, 0, len(d.causes))
	for tr := range d.causes {
		out = append(out, tr)
	}
	return out
}

// Next returns the states one change away from s.
func (d *Diagram) Next(s string) []string {
	var out []string
	for _, to := range d.states {
		if d.Allows(s, to) {
			out = append(out, to)
		}
	}
	return out
}

// Reachable returns the states reachable from s (s included).
func (d *Diagram) Reachable(s string) map[string]bool {
	seen := map[string]bool{s: true}
	todo := []string{s}
	for len(todo) > 0 {
		cur := todo[0]
		todo = todo[1:]
		for _, n := range d.Next(cur) {
			if !seen[n] {
				seen[n] = true
				todo = append(todo, n)
			}
		}
	}
	return seen
}

// Name is s as a diagram writes it ("[*]" for Entering).
func Name(s string) string {
	if s == Entering {
		return "[*]"
	}
	return s
}

// Body is text from its "@startuml" line to its "@enduml" line: what
// docs/design.md shows of a diagram (the comments before it are for the
// file's reader).
func Body(text string) string {
	lines := strings.Split(text, "\n")
	start, end := -1, -1
	for i, l := range lines {
		switch strings.TrimSpace(l) {
		case "@startuml":
			if start < 0 {
				start = i
			}
		case "@enduml":
			end = i
		}
	}
	if start < 0 || end < start {
		return ""
	}
	return strings.Join(lines[start:end+1], "\n")
}
