// Typed operator verbs: each verb's name on the wire (API path, bulk
// body, CLI word) is its String, read back once by Parse at that edge.

package view

import (
	"fmt"
	"strings"
)

// InstanceVerb is an operator verb on an instance (docs/design.md §4).
type InstanceVerb int

// The instance verbs. The zero value is no verb.
const (
	InstanceHold InstanceVerb = iota + 1
	InstanceDrain
	InstanceRun
	InstanceKill
)

// InstanceVerbs lists the instance verbs.
var InstanceVerbs = [...]InstanceVerb{InstanceHold, InstanceDrain, InstanceRun, InstanceKill}

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
	for _, v := range InstanceVerbs {
		if v.String() == s {
			return v, nil
		}
	}
	return 0, UnknownInstanceVerb(s)
}

// UnknownInstanceVerb is the error for s, which names no instance verb.
func UnknownInstanceVerb(s string) *UnknownVerbError {
	names := make([]string, len(InstanceVerbs))
	for i, v := range InstanceVerbs {
		names[i] = v.String()
	}
	return &UnknownVerbError{Kind: "instance", Verb: s, Known: orList(names)}
}

// ContainerVerb is an operator verb on a container (docs/design.md §4).
// ContainerPriority takes a value, which travels beside it (a bulk
// request's priority, PATCH's body); submit has its own methods.
type ContainerVerb int

// The container verbs. The zero value is no verb.
const (
	ContainerHold ContainerVerb = iota + 1
	ContainerRelease
	ContainerKill
	ContainerPriority
)

// ContainerVerbs lists the container verbs.
var ContainerVerbs = [...]ContainerVerb{ContainerHold, ContainerRelease, ContainerKill, ContainerPriority}

func (v ContainerVerb) String() string {
	switch v {
	case ContainerHold:
		return "hold"
	case ContainerRelease:
		return "release"
	case ContainerKill:
		return "kill"
	case ContainerPriority:
		return "priority"
	}
	return fmt.Sprintf("ContainerVerb(%d)", int(v))
}

// TakesValue reports whether v needs a value beside it (a priority).
func (v ContainerVerb) TakesValue() bool { return v == ContainerPriority }

// ParseContainerVerb returns the container verb named s, or an
// *UnknownVerbError.
func ParseContainerVerb(s string) (ContainerVerb, error) {
	for _, v := range ContainerVerbs {
		if v.String() == s {
			return v, nil
		}
	}
	return 0, UnknownContainerVerb(s)
}

// UnknownContainerVerb is the error for s, which names no container verb.
func UnknownContainerVerb(s string) *UnknownVerbError {
	names := make([]string, len(ContainerVerbs))
	for i, v := range ContainerVerbs {
		names[i] = v.String()
	}
	return &UnknownVerbError{Kind: "container", Verb: s, Known: orList(names)}
}

// UnknownVerbError is a verb name, or value, that is not a verb of its
// kind. A verb is named in a request's path, so it is not found.
type UnknownVerbError struct {
	Kind  string // "instance" or "container"
	Verb  string
	Known string // the verbs of the kind, e.g. "hold, release or kill"
}

func (e *UnknownVerbError) Error() string {
	return fmt.Sprintf("unknown %s verb %q (%s)", e.Kind, e.Verb, e.Known)
}

// ErrorKind implements Kinded.
func (e *UnknownVerbError) ErrorKind() Kind { return KindNotFound }

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
