package worker

import (
	_ "embed"
	"fmt"
	"strings"
)

// stateDiagram is states.txt: the instance state diagram, which is also the
// table of the state changes setState allows.
//
//go:embed states.txt
var stateDiagram string

// entering stands for "[*]" in the diagram: the state of an instance before
// it enters the pool.
const entering State = ""

// transition is a change from one state to another.
type transition struct{ from, to State }

// parseStateDiagram returns the transitions the diagram lists, each with
// its cause. It accepts only the states the pool has, so a typo in the
// diagram is an error rather than a transition that never matches.
func parseStateDiagram(text string) (map[transition]string, error) {
	known := map[string]State{"[*]": entering}
	for _, s := range []State{StateUnknown, StateBooting, StateIdle, StateRunning, StateShutdown} {
		known[string(s)] = s
	}
	allowed := make(map[transition]string)
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
			return nil, fmt.Errorf("states.txt:%d: %q outside @startuml ... @enduml", n+1, line)
		}
		arrow, cause, ok := strings.Cut(line, ":")
		from, to, ok2 := strings.Cut(arrow, "-->")
		cause = strings.TrimSpace(cause)
		if !ok || !ok2 || cause == "" {
			return nil, fmt.Errorf("states.txt:%d: want \"FROM --> TO : cause\", got %q", n+1, line)
		}
		f, okf := known[strings.TrimSpace(from)]
		t, okt := known[strings.TrimSpace(to)]
		if !okf || !okt || t == entering {
			return nil, fmt.Errorf("states.txt:%d: unknown state in %q", n+1, line)
		}
		tr := transition{f, t}
		if _, dup := allowed[tr]; dup {
			return nil, fmt.Errorf("states.txt:%d: %s --> %s listed twice", n+1, stateName(f), stateName(t))
		}
		allowed[tr] = cause
	}
	if inside {
		return nil, fmt.Errorf("states.txt: no @enduml")
	}
	return allowed, nil
}

// stateName is s as the diagram writes it.
func stateName(s State) string {
	if s == entering {
		return "[*]"
	}
	return string(s)
}
