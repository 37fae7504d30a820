// Package keys is the console's one keymap, built on bubbles' key.Binding:
// every action has a name (its key in [tui.keys] of the config), the keys
// bound to it and its help text. The short help in the footer and the
// full help on `?` are rendered by bubbles' help.Model from it; duplicate
// bindings are refused at start-up, and by check-config through Validate,
// naming both actions.
package keys

import (
	"fmt"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
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
	Search    = "search"
	Wrap      = "wrap"
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

// Group names the sections of the full help.
type Group string

// Groups, in the order the full help shows them.
const (
	GroupGeneral Group = "General"
	GroupViews   Group = "Views"
	GroupMove    Group = "Moving"
	GroupRows    Group = "Rows"
	GroupVerbs   Group = "Verbs"
)

var groups = []Group{GroupGeneral, GroupViews, GroupMove, GroupRows, GroupVerbs}

// Binding is one action: a key.Binding (its keys and help) and what the
// console needs besides.
type Binding struct {
	key.Binding
	Action string
	Scope  Scope
	Group  Group
	Short  string // its word in the short help
	Footer bool   // in the table views' footer
	Verb   bool   // changes the dispatcher (disabled by --read-only)
}

type def struct {
	action string
	keys   []string
	scope  Scope
	group  Group
	short  string
	long   string
	verb   bool
}

// defaults are the built-in bindings in help order. A short word starting
// with + is also in the table views' footer.
var defaults = []def{
	{Quit, []string{"q", "ctrl+c"}, Global, GroupGeneral, "+quit", "quit", false},
	{Help, []string{"?"}, Global, GroupGeneral, "+help", "help (this screen)", false},
	{Command, []string{":"}, Global, GroupGeneral, "+cmd", "command (:containers Running, :types, :q; tab completes, ↑↓ history)", false},
	{Filter, []string{"/"}, Global, GroupGeneral, "+filter", "filter rows (substring or regexp; leading ! inverts)", false},
	{Back, []string{"esc"}, Global, GroupGeneral, "back", "clear filter, or go back", false},
	{Mouse, []string{"m"}, Global, GroupGeneral, "mouse", "toggle mouse (off keeps text selection)", false},
	{ViewInst, []string{"1"}, Global, GroupViews, "instances", "instances view", false},
	{ViewCtr, []string{"2"}, Global, GroupViews, "containers", "containers view", false},
	{ViewTypes, []string{"3"}, Global, GroupViews, "types", "instance types view", false},
	{ViewEv, []string{"4"}, Global, GroupViews, "events", "events view", false},
	{Details, []string{"enter"}, Global, GroupViews, "+details", "details", false},
	{Logs, []string{"l"}, Global, GroupViews, "+logs", "container logs (follow)", false},
	{Search, []string{"n"}, Global, GroupViews, "next", "logs: next match (/ searches)", false},
	{Wrap, []string{"w"}, Global, GroupViews, "wrap", "logs and details: wrap long lines or not", false},
	{Up, []string{"up", "k"}, Global, GroupMove, "up", "cursor up / scroll up", false},
	{Down, []string{"down", "j"}, Global, GroupMove, "down", "cursor down / scroll down", false},
	{PageUp, []string{"pgup", "ctrl+b"}, Global, GroupMove, "page up", "page up", false},
	{PageDown, []string{"pgdown", "ctrl+f"}, Global, GroupMove, "page down", "page down", false},
	{Top, []string{"home", "g"}, Global, GroupMove, "top", "first row / top", false},
	{Bottom, []string{"end", "G"}, Global, GroupMove, "end", "last row / end (logs: follow)", false},
	{Mark, []string{"space"}, Global, GroupRows, "+mark", "mark/unmark row (verbs apply to marked rows)", false},
	{MarkAll, []string{"ctrl+a"}, Global, GroupRows, "mark all", "mark all shown rows / clear marks", false},
	{Copy, []string{"y"}, Global, GroupRows, "copy", "copy the full id to the clipboard (OSC 52)", false},
	{Pause, []string{"p"}, Global, GroupVerbs, "pause", "pause/resume the scheduler", true},
	{Hold, []string{"h"}, Global, GroupVerbs, "+hold", "instances: hold; containers: hold/release", true},
	{Drain, []string{"d"}, Instances, GroupVerbs, "+drain", "drain instance", true},
	{Run, []string{"r"}, Instances, GroupVerbs, "+run", "run instance (back to normal)", true},
	{Kill, []string{"K"}, Global, GroupVerbs, "+kill", "kill instance or container", true},
	{PrioUp, []string{"+", "="}, Containers, GroupVerbs, "+prio+", "raise priority", true},
	{PrioDown, []string{"-"}, Containers, GroupVerbs, "+prio-", "lower priority (0 = never scheduled, asks first)", true},
}

// Keymap resolves keys to actions.
type Keymap struct {
	bindings []Binding
	byAction map[string]int
}

// Validate checks [tui.keys] overrides (action -> keys, several separated
// by commas) as the console would at start-up: check-config calls it, so
// a config the console would refuse is refused there too.
func Validate(overrides map[string]string) error {
	_, err := New(overrides)
	return err
}

func parseKeys(s string) []string {
	if s == " " {
		return []string{"space"}
	}
	var ks []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			ks = append(ks, k)
		}
	}
	return ks
}

// New builds the keymap from the defaults and overrides (action -> keys,
// several keys separated by commas). It fails on unknown action names and
// on a key bound to two actions whose scopes overlap.
func New(overrides map[string]string) (*Keymap, error) {
	km := &Keymap{byAction: map[string]int{}}
	for i, d := range defaults {
		km.byAction[d.action] = i
	}
	ks := make([][]string, len(defaults))
	for i, d := range defaults {
		ks[i] = d.keys
	}
	names := make([]string, 0, len(overrides))
	for k := range overrides {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		i, ok := km.byAction[name]
		if !ok {
			return nil, fmt.Errorf("keys: unknown action %q in [tui.keys]", name)
		}
		if ks[i] = parseKeys(overrides[name]); len(ks[i]) == 0 {
			return nil, fmt.Errorf("keys: action %q in [tui.keys] is bound to no key", name)
		}
	}
	owner := map[string][]int{}
	for i, d := range defaults {
		for _, k := range ks[i] {
			for _, j := range owner[k] {
				if overlap(defaults[j].scope, d.scope) {
					return nil, fmt.Errorf("keys: %q is bound to both %q and %q; rebind one in [tui.keys]", k, defaults[j].action, d.action)
				}
			}
			owner[k] = append(owner[k], i)
		}
	}
	for i, d := range defaults {
		long := d.long
		if d.scope != Global {
			long += " [" + d.scope.String() + "]"
		}
		km.bindings = append(km.bindings, Binding{
			Binding: key.NewBinding(key.WithKeys(ks[i]...), key.WithHelp(strings.Join(ks[i], "/"), long)),
			Action:  d.action, Scope: d.scope, Group: d.group, Verb: d.verb,
			Short: strings.TrimPrefix(d.short, "+"), Footer: strings.HasPrefix(d.short, "+"),
		})
	}
	return km, nil
}

// Lookup returns the action the key (a tea.KeyPressMsg, or anything whose
// String is a key name) is bound to in scope, or "".
func (km *Keymap) Lookup(scope Scope, k fmt.Stringer) string {
	for i := range km.bindings {
		b := &km.bindings[i]
		if (b.Scope == Global || b.Scope == scope) && key.Matches(k, b.Binding) {
			return b.Action
		}
	}
	return ""
}

// Name is a key name as a fmt.Stringer, for Lookup.
type Name string

func (n Name) String() string { return string(n) }

// BoundElsewhere reports whether the key is bound to an action of another
// view's scope only (so "not available here").
func (km *Keymap) BoundElsewhere(k fmt.Stringer) bool {
	for i := range km.bindings {
		if key.Matches(k, km.bindings[i].Binding) {
			return true
		}
	}
	return false
}

// Binding returns an action's binding.
func (km *Keymap) Binding(action string) key.Binding {
	if i, ok := km.byAction[action]; ok {
		return km.bindings[i].Binding
	}
	return key.Binding{}
}

// Keys returns the keys bound to an action.
func (km *Keymap) Keys(action string) []string { return km.Binding(action).Keys() }

// Key returns the first key bound to an action (for hints).
func (km *Keymap) Key(action string) string {
	if ks := km.Keys(action); len(ks) > 0 {
		return ks[0]
	}
	return ""
}

// IsVerb reports whether an action changes the dispatcher.
func (km *Keymap) IsVerb(action string) bool {
	i, ok := km.byAction[action]
	return ok && km.bindings[i].Verb
}

// Short returns the footer's bindings in scope: quit and help first, so
// that the help bubble, which drops what does not fit from the end, never
// drops them; verbs left out when readOnly.
func (km *Keymap) Short(scope Scope, readOnly bool) []key.Binding {
	out := []key.Binding{km.short(Quit), km.short(Help)}
	// The view's verbs next, then the rest: what does not fit is dropped
	// from the end, and `?` lists it all.
	for _, verbs := range []bool{true, false} {
		for _, b := range km.bindings {
			if b.Verb != verbs || !b.Footer || b.Action == Quit || b.Action == Help || (readOnly && b.Verb) {
				continue
			}
			if b.Scope != Global && b.Scope != scope {
				continue
			}
			if (b.Action == Logs || b.Action == Kill || b.Action == Hold) && scope == Global {
				continue // containers and instances only
			}
			if b.Action == Logs && scope != Containers {
				continue
			}
			out = append(out, km.short(b.Action))
		}
	}
	return out
}

// ShortOf returns short-help bindings for the named actions, in order
// (for the footers of the help, details and logs screens).
func (km *Keymap) ShortOf(actions ...string) []key.Binding {
	out := make([]key.Binding, 0, len(actions))
	for _, a := range actions {
		out = append(out, km.short(a))
	}
	return out
}

func (km *Keymap) short(action string) key.Binding {
	i := km.byAction[action]
	b := km.bindings[i]
	return key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(b.Keys()[0], b.Short))
}

// Section is one group of the full help.
type Section struct {
	Title    Group
	Bindings []key.Binding
}

// Full returns the full help, one section per group; verbs are left out
// when readOnly.
func (km *Keymap) Full(readOnly bool) []Section {
	var out []Section
	for _, g := range groups {
		s := Section{Title: g}
		for _, b := range km.bindings {
			if b.Group == g && !(readOnly && b.Verb) {
				s.Bindings = append(s.Bindings, b.Binding)
			}
		}
		if len(s.Bindings) > 0 {
			out = append(out, s)
		}
	}
	return out
}
