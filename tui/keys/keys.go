// Package keys is the console's one keymap: every action has a name, the
// keys bound to it and a help line; help is generated from it and
// duplicate bindings are refused at start-up naming both actions.
package keys

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Scope says where an action applies.
type Scope int

// Scopes. Global actions apply in every table view; the others only in
// their view. Two actions conflict when they share a key and their scopes
// overlap.
const (
	Global Scope = iota
	Instances
	Containers
)

func (s Scope) String() string {
	switch s {
	case Instances:
		return "instances"
	case Containers:
		return "containers"
	}
	return "global"
}

func overlap(a, b Scope) bool { return a == Global || b == Global || a == b }

// Action names (the keys of [tui.keys] in the config).
const (
	Quit      = "quit"
	Help      = "help"
	Command   = "command"
	Filter    = "filter"
	Back      = "back"
	ViewInst  = "view_instances"
	ViewCtr   = "view_containers"
	ViewTypes = "view_types"
	ViewEv    = "view_events"
	Up        = "up"
	Down      = "down"
	PageUp    = "page_up"
	PageDown  = "page_down"
	Top       = "top"
	Bottom    = "bottom"
	Mark      = "mark"
	MarkAll   = "mark_all"
	Details   = "details"
	Logs      = "logs"
	Pause     = "pause"
	Mouse     = "mouse"
	Hold      = "hold"
	Drain     = "drain"
	Run       = "run"
	Kill      = "kill"
	PrioUp    = "priority_up"
	PrioDown  = "priority_down"
	Copy      = "copy"
)

// Binding is one action and its keys.
type Binding struct {
	Action string
	Keys   []string
	Scope  Scope
	Help   string
	Verb   bool // changes the dispatcher (disabled by --read-only)
}

// Defaults returns the built-in bindings in help order.
func Defaults() []Binding {
	return []Binding{
		{Quit, []string{"q", "ctrl+c"}, Global, "quit", false},
		{Help, []string{"?"}, Global, "help (this screen)", false},
		{Command, []string{":"}, Global, "command mode (:instances :containers :types :events :q)", false},
		{Filter, []string{"/"}, Global, "filter rows (substring or regexp; leading ! inverts)", false},
		{Back, []string{"esc"}, Global, "clear filter, or go back", false},
		{ViewInst, []string{"1"}, Global, "instances view", false},
		{ViewCtr, []string{"2"}, Global, "containers view", false},
		{ViewTypes, []string{"3"}, Global, "instance types view", false},
		{ViewEv, []string{"4"}, Global, "events view", false},
		{Up, []string{"up", "k"}, Global, "cursor up", false},
		{Down, []string{"down", "j"}, Global, "cursor down", false},
		{PageUp, []string{"pgup", "ctrl+b"}, Global, "page up", false},
		{PageDown, []string{"pgdown", "ctrl+f"}, Global, "page down", false},
		{Top, []string{"home", "g"}, Global, "first row", false},
		{Bottom, []string{"end", "G"}, Global, "last row", false},
		{Mark, []string{"space"}, Global, "mark/unmark row (verbs apply to marked rows)", false},
		{MarkAll, []string{"ctrl+a"}, Global, "mark all shown rows / clear marks", false},
		{Details, []string{"enter"}, Global, "details", false},
		{Logs, []string{"l"}, Global, "container logs (follow)", false},
		{Pause, []string{"p"}, Global, "pause/resume the scheduler", true},
		{Mouse, []string{"m"}, Global, "toggle mouse (off keeps text selection)", false},
		{Copy, []string{"y"}, Global, "copy the full id to the clipboard (OSC 52)", false},
		{Hold, []string{"h"}, Global, "instances: hold; containers: hold/release", true},
		{Drain, []string{"d"}, Instances, "drain instance", true},
		{Run, []string{"r"}, Instances, "run instance (back to normal)", true},
		{Kill, []string{"K"}, Global, "kill instance or container", true},
		{PrioUp, []string{"+", "="}, Containers, "raise priority", true},
		{PrioDown, []string{"-"}, Containers, "lower priority", true},
	}
}

// Keymap resolves keys to actions.
type Keymap struct {
	bindings []Binding
	byKey    map[string][]int // key -> binding indexes
}

// New builds the keymap from the defaults and overrides (action -> keys,
// several keys separated by commas). It fails on unknown action names and
// on a key bound to two actions whose scopes overlap.
func New(overrides map[string]string) (*Keymap, error) {
	bs := Defaults()
	idx := map[string]int{}
	for i, b := range bs {
		idx[b.Action] = i
	}
	names := make([]string, 0, len(overrides))
	for k := range overrides {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		i, ok := idx[name]
		if !ok {
			return nil, fmt.Errorf("keys: unknown action %q in [tui.keys]", name)
		}
		var ks []string
		for _, k := range strings.Split(overrides[name], ",") {
			if k = strings.TrimSpace(k); k != "" {
				if k == " " {
					k = "space"
				}
				ks = append(ks, k)
			}
		}
		if len(ks) == 0 {
			return nil, fmt.Errorf("keys: action %q bound to no key", name)
		}
		bs[i].Keys = ks
	}
	km := &Keymap{bindings: bs, byKey: map[string][]int{}}
	for i, b := range bs {
		for _, k := range b.Keys {
			for _, j := range km.byKey[k] {
				if overlap(bs[j].Scope, b.Scope) {
					return nil, fmt.Errorf("keys: %q is bound to both %q and %q", k, bs[j].Action, b.Action)
				}
			}
			km.byKey[k] = append(km.byKey[k], i)
		}
	}
	return km, nil
}

// Lookup returns the action bound to key in scope, or "".
func (km *Keymap) Lookup(scope Scope, key string) string {
	for _, i := range km.byKey[key] {
		if s := km.bindings[i].Scope; s == Global || s == scope {
			return km.bindings[i].Action
		}
	}
	return ""
}

// Bound reports whether key is bound to any action in scope.
func (km *Keymap) Bound(scope Scope, key string) bool { return km.Lookup(scope, key) != "" }

// Keys returns the keys bound to an action.
func (km *Keymap) Keys(action string) []string {
	for _, b := range km.bindings {
		if b.Action == action {
			return slices.Clone(b.Keys)
		}
	}
	return nil
}

// Key returns the first key bound to an action (for hints).
func (km *Keymap) Key(action string) string {
	if ks := km.Keys(action); len(ks) > 0 {
		return ks[0]
	}
	return ""
}

// IsVerb reports whether an action changes the dispatcher.
func (km *Keymap) IsVerb(action string) bool {
	for _, b := range km.bindings {
		if b.Action == action {
			return b.Verb
		}
	}
	return false
}

// HelpLines renders the help screen: one line per action, verbs left out
// when readOnly.
func (km *Keymap) HelpLines(readOnly bool) []string {
	var out []string
	for _, b := range km.bindings {
		if readOnly && b.Verb {
			continue
		}
		scope := ""
		if b.Scope != Global {
			scope = " [" + b.Scope.String() + "]"
		}
		out = append(out, fmt.Sprintf("  %-16s %-16s %s%s", strings.Join(b.Keys, " "), b.Action, b.Help, scope))
	}
	out = append(out, fmt.Sprintf("  %-16s %-16s %s", "shift+letter", "sort", "sort by the column whose letter is marked in the header; again to invert"))
	return out
}
