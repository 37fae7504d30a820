// The instance state diagram (states.txt), parsed into the allowed changes.

package worker

import (
	_ "embed"

	"dispatch-tui/engine/statediagram"
)

// stateDiagram is states.txt: the instance state diagram, which is also the
// table of the state changes setState allows.
//
//go:embed states.txt
var stateDiagram string

// entering stands for "[*]" in the diagram: the state of an instance before
// it enters the pool.
const entering State = statediagram.Entering

// instanceStates are the states the diagram may name.
var instanceStates = []string{string(StateUnknown), string(StateBooting), string(StateIdle), string(StateRunning), string(StateShutdown)}

// parseStateDiagram reads text as the instance state diagram.
func parseStateDiagram(text string) (*statediagram.Diagram, error) {
	return statediagram.Parse("states.txt", text, instanceStates)
}

// stateName is s as the diagram writes it.
func stateName(s State) string { return statediagram.Name(string(s)) }
