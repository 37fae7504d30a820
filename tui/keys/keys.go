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

// Scopes. Global actions apply everywhere; Tables in every table view;
// Instances and Containers in their view only; Pager on the screens over
// the tables (help, details, logs, YAML), where keys are a pager's and no
// single letter changes state. Two actions conflict when they share a key
// and apply in a common place.
const (
	Global Scope = iota
	Tables
	Instances
	Containers
	Pager
)

// places are where keys are looked up: the instances and containers
// views, the other table views (Tables) and the screens (Pager).
var places = []Scope{Instances, Containers, Tables, Pager}

func (s Scope) String() string {
	switch s {
	case Tables:
		return "tables"
	case Instances:
		return "instances"
	case Containers:
		return "containers"
	case Pager:
		return "logs, details and help"
	}
	return "global"
}

// applies reports whether an action of scope s applies at place.
func (s Scope) applies(place Scope) bool {
	switch s {
	case Global:
		return true
	case Tables:
		return place != Pager
	}
	return s == place
}

func overlap(a, b Scope) bool {
	for _, p := range places {
		if a.applies(p) && b.applies(p) {
			return true
		}
	}
	return false
}

// Reserved are keys taken at a place by something other than an action
// (the table views' shift+letter sorts): place -> key -> what it does
// there, e.g. Instances -> "H" -> "sorts by HOST in the instances view".
type Reserved map[Scope]map[string]string

// Action names (the keys of [tui.keys] in the config).
const (
	Quit       = "quit"
	Help       = "help"
	Command    = "command"
	Filter     = "filter"
	Back       = "back"
	ViewInst   = "view_instances"
	ViewCtr    = "view_containers"
	ViewTypes  = "view_types"
	ViewEv     = "view_events"
	Up         = "up"
	Down       = "down"
	PageUp     = "page_up"
	PageDown   = "page_down"
	Top        = "top"
	Bottom     = "bottom"
	Mark       = "mark"
	MarkAll    = "mark_all"
	Details    = "details"
	Logs       = "logs"
	Search     = "search"
	Wrap       = "wrap"
	Pause      = "pause"
	Mouse      = "mouse"
	Hold       = "hold"
	Drain      = "drain"
	Run        = "run"
	Kill       = "kill"
	PrioUp     = "priority_up"
	PrioDown   = "priority_down"
	PrioEdit   = "priority"
	Shell      = "shell"
	Copy       = "copy"
	Yaml       = "yaml"
	NextView   = "next_view"
	PrevView   = "previous_view"
	SearchPrev = "search_previous"
	Left       = "left"
	Right      = "right"
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
	{Command, []string{":"}, Global, GroupGeneral, "cmd", "command (:containers Running, :ctr, :inst, :types, :cost, :q; tab completes, ↑↓ history)", false},
	{Filter, []string{"/"}, Global, GroupGeneral, "+filter", "filter rows (substring or regexp; leading ! inverts); logs: search", false},
	{Back, []string{"esc"}, Global, GroupGeneral, "back", "clear filter, or go back", false},
	{Mouse, []string{"m"}, Global, GroupGeneral, "mouse", "toggle mouse (off keeps text selection)", false},
	{ViewInst, []string{"1"}, Global, GroupViews, "instances", "instances view", false},
	{ViewCtr, []string{"2"}, Global, GroupViews, "containers", "containers view", false},
	{ViewTypes, []string{"3"}, Global, GroupViews, "types", "instance types view", false},
	{ViewEv, []string{"4"}, Global, GroupViews, "events", "events view", false},
	{NextView, []string{"tab"}, Global, GroupViews, "next view", "next view", false},
	{PrevView, []string{"shift+tab"}, Global, GroupViews, "previous view", "previous view", false},
	{Details, []string{"d", "enter"}, Global, GroupViews, "+describe", "details (describe)", false},
	{Yaml, []string{"y"}, Global, GroupViews, "yaml", "the object as YAML", false},
	{Logs, []string{"l"}, Global, GroupViews, "+logs", "container logs (follow)", false},
	{Search, []string{"n"}, Pager, GroupViews, "next", "logs: next match (/ searches)", false},
	{SearchPrev, []string{"N"}, Pager, GroupViews, "previous", "logs: previous match", false},
	{Wrap, []string{"w"}, Pager, GroupViews, "wrap", "logs and details: wrap long lines or not", false},
	{Left, []string{"left"}, Pager, GroupMove, "←", "logs and details unwrapped: scroll left", false},
	{Right, []string{"right"}, Pager, GroupMove, "→", "logs and details unwrapped: scroll right", false},
	{Up, []string{"up", "k"}, Global, GroupMove, "up", "cursor up / scroll up", false},
	{Down, []string{"down", "j"}, Global, GroupMove, "down", "cursor down / scroll down", false},
	{PageUp, []string{"pgup", "ctrl+b"}, Global, GroupMove, "page up", "page up", false},
	{PageDown, []string{"pgdown", "ctrl+f"}, Global, GroupMove, "page down", "page down", false},
	{Top, []string{"home", "g"}, Global, GroupMove, "top", "first row / top (and column 0)", false},
	{Bottom, []string{"end", "G"}, Global, GroupMove, "end", "last row / end (logs: follow)", false},
	{Mark, []string{"space"}, Tables, GroupRows, "mark", "mark/unmark row (verbs apply to marked rows)", false},
	{MarkAll, []string{"ctrl+a"}, Tables, GroupRows, "mark all", "mark all shown rows / clear marks", false},
	{Copy, []string{"c"}, Global, GroupRows, "copy", "copy the full id to the clipboard (OSC 52)", false},
	{Pause, []string{"p"}, Tables, GroupVerbs, "pause", "pause/resume the scheduler", true},
	{Hold, []string{"h"}, Tables, GroupVerbs, "+hold", "instances: hold; containers: hold/release", true},
	{Drain, []string{"D"}, Instances, GroupVerbs, "+drain", "drain instance", true},
	{Run, []string{"r"}, Instances, GroupVerbs, "+run", "run instance (back to normal)", true},
	{Shell, []string{"s"}, Instances, GroupVerbs, "shell", "shell on the instance (over the dispatcher's SSH connection; recorded as an event)", true},
	{Kill, []string{"K", "ctrl+d"}, Tables, GroupVerbs, "+kill", "kill (delete) instance or container", true},
	{PrioUp, []string{"+", "="}, Containers, GroupVerbs, "+prio", "raise priority by 1", true},
	{PrioDown, []string{"-"}, Containers, GroupVerbs, "prio-", "lower priority by 1 (0 = never scheduled, asks first)", true},
	{PrioEdit, []string{"e"}, Containers, GroupVerbs, "+edit", "edit priority (type the new value)", true},
}

// Keymap resolves keys to actions.
type Keymap struct {
	bindings []Binding
	byAction map[string]int
}

// Validate checks [tui.keys] overrides (action -> keys, several separated
// by commas) as the console would at start-up, with the keys reserved by
// the views' sorts: check-config calls it (through the console's
// tui.ValidateKeys), so a config the console would refuse is refused
// there too.
func Validate(overrides map[string]string, reserved Reserved) error {
	_, err := New(overrides, reserved)
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
// several keys separated by commas). It fails on unknown action names, on
// a key bound to two actions whose scopes overlap, and on a key reserved
// (a sort) where its action applies.
func New(overrides map[string]string, reserved Reserved) (*Keymap, error) {
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
			for _, p := range places {
				if what, ok := reserved[p][k]; ok && d.scope.applies(p) {
					return nil, fmt.Errorf("keys: %q is bound to %q, but %s; rebind %q in [tui.keys]", k, d.action, what, d.action)
				}
			}
		}
	}
	for i, d := range defaults {
		long := d.long
		if d.scope == Instances || d.scope == Containers {
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
// String is a key name) is bound to at place (Instances, Containers,
// Tables for the other table views, Pager for the screens), or "".
func (km *Keymap) Lookup(place Scope, k fmt.Stringer) string {
	for i := range km.bindings {
		b := &km.bindings[i]
		if b.Scope.applies(place) && key.Matches(k, b.Binding) {
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
func (km *Keymap) Short(place Scope, readOnly bool) []key.Binding {
	out := []key.Binding{km.short(Quit), km.short(Help)}
	// The view's verbs next, then the rest: what does not fit is dropped
	// from the end, and `?` lists it all.
	for _, verbs := range []bool{true, false} {
		for _, b := range km.bindings {
			if b.Verb != verbs || !b.Footer || b.Action == Quit || b.Action == Help || (readOnly && b.Verb) {
				continue
			}
			if !b.Scope.applies(place) {
				continue
			}
			if (b.Action == Kill || b.Action == Hold) && place == Tables {
				continue // containers and instances only
			}
			if b.Action == Logs && place != Containers {
				continue
			}
			sb := km.short(b.Action)
			if b.Action == PrioUp {
				// One item for both: "+/- prio".
				down := km.bindings[km.byAction[PrioDown]].Keys()
				sb = key.NewBinding(key.WithKeys(append(b.Keys(), down...)...), key.WithHelp(b.Keys()[0]+"/"+down[0], b.Short))
			}
			out = append(out, sb)
		}
	}
	return append(out, km.short(Command)) // last: the first dropped when narrow
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
