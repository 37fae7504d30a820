// The operator verbs' names on the wire, and parsing them back.

package engine

import (
	"fmt"
	"strings"
)

// InstanceVerb is an operator verb on an instance (docs/design.md §4). Its
// name on the wire (API path, CLI word, TUI) is String; ParseInstanceVerb
// reads it back at those edges.
type InstanceVerb int

// The instance verbs. The zero value is no verb.
const (
	InstanceHold InstanceVerb = iota + 1
	InstanceDrain
	InstanceRun
	InstanceKill
)

func (v InstanceVerb) String() string {
	switch v {
	case InstanceHold:
		return "hold"
	case InstanceDrain:
		return "drain"
	case InstanceRun:
		return "run"
	case InstanceKill:
		return "kill"
	}
	return fmt.Sprintf("InstanceVerb(%d)", int(v))
}

// ParseInstanceVerb returns the instance verb named s, or an
// *UnknownVerbError.
func ParseInstanceVerb(s string) (InstanceVerb, error) {
	for v := InstanceHold; v <= InstanceKill; v++ {
		if v.String() == s {
			return v, nil
		}
	}
	return 0, unknownInstanceVerb(s)
}

func unknownInstanceVerb(s string) *UnknownVerbError {
	names := make([]string, 0, InstanceKill)
	for v := InstanceHold; v <= InstanceKill; v++ {
		names = append(names, v.String())
	}
	return &UnknownVerbError{Kind: "instance", Verb: s, Known: orList(names)}
}

// ContainerVerb is an operator verb on a container that is chosen by name
// (docs/design.md §4); priority and submit take arguments and have their
// own methods.
type ContainerVerb int

// The container verbs. The zero value is no verb.
const (
	ContainerHold ContainerVerb = iota + 1
	ContainerRelease
	ContainerKill
)

func (v ContainerVerb) String() string {
	switch v {
	case ContainerHold:
		return "hold"
	case ContainerRelease:
		return "release"
	case ContainerKill:
		return "kill"
	}
	return fmt.Sprintf("ContainerVerb(%d)", int(v))
}

// ParseContainerVerb returns the container verb named s, or an
// *UnknownVerbError.
func ParseContainerVerb(s string) (ContainerVerb, error) {
	for v := ContainerHold; v <= ContainerKill; v++ {
		if v.String() == s {
			return v, nil
		}
	}
	return 0, unknownContainerVerb(s)
}

func unknownContainerVerb(s string) *UnknownVerbError {
	names := make([]string, 0, ContainerKill)
	for v := ContainerHold; v <= ContainerKill; v++ {
		names = append(names, v.String())
	}
	return &UnknownVerbError{Kind: "container", Verb: s, Known: orList(names)}
}

// UnknownVerbError is a verb name, or value, that is not a verb of its kind.
type UnknownVerbError struct {
	Kind  string // "instance" or "container"
	Verb  string
	Known string // the verbs of the kind, e.g. "hold, release or kill"
}

func (e *UnknownVerbError) Error() string {
	return fmt.Sprintf("unknown %s verb %q (%s)", e.Kind, e.Verb, e.Known)
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
