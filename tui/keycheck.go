// The keys the sorts take, so the keymap refuses a clash.

package tui

import (
	"dispatch-tui/tui/keys"
	"dispatch-tui/tui/table"
)

// The keys the table views' shift+letter sorts take, from their columns,
// so that the keymap refuses an action bound to one of them where it
// applies (at start-up and in check-config).

// sortKeys returns each place's sort keys and what they sort by.
func sortKeys() keys.Reserved {
	r := keys.Reserved{}
	add := func(p keys.Scope, view string, cols []table.Column) {
		if r[p] == nil {
			r[p] = map[string]string{}
		}
		for _, c := range cols {
			if c.SortKey != "" {
				if _, taken := r[p][c.SortKey]; !taken {
					r[p][c.SortKey] = "it sorts by " + c.Title + " in the " + view + " view"
				}
			}
		}
	}
	add(keys.Instances, viewNames[vInstances], instanceColumns())
	add(keys.Containers, viewNames[vContainers], containerColumns())
	add(keys.Tables, viewNames[vTypes], typeColumns())
	add(keys.Tables, viewNames[vEvents], eventColumns())
	return r
}

// ValidateKeys checks [tui.keys] overrides as the console does at
// start-up: unknown actions, keys bound twice, and keys a sort takes.
func ValidateKeys(overrides map[string]string) error {
	return keys.Validate(overrides, sortKeys())
}
