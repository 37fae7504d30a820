// Package dialog is the confirmation dialog: Cancel is focused when it
// opens, tab/arrows move the focus, enter chooses, esc cancels. A typed
// confirmation (an id, or a count for bulk verbs) must be entered before
// the OK button does anything.
package dialog

import (
	"strings"

	"dispatch-tui/tui/theme"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// Result is what a key did to the dialog.
type Result int

// Results.
const (
	Open      Result = iota // still open
	Cancelled               // closed without acting
	Confirmed               // closed: act
)

// Confirm is a yes/no dialog, optionally requiring typed text.
type Confirm struct {
	Title  string
	Body   []string
	OK     string // label of the confirming button
	Expect string // text to type before OK works ("" = none)
	Typed  string
	// Focus: 0 = Cancel (default), 1 = OK.
	Focus int
	Hint  string // shown after a failed attempt
}

// New returns a dialog with Cancel focused.
func New(title, ok, expect string, body ...string) *Confirm {
	return &Confirm{Title: title, OK: ok, Expect: expect, Body: body}
}

// Ready reports whether the typed confirmation matches.
func (d *Confirm) Ready() bool { return d.Expect == "" || d.Typed == d.Expect }

// Update handles one key.
func (d *Confirm) Update(msg tea.KeyPressMsg) Result {
	switch k := msg.String(); k {
	case "esc", "ctrl+c":
		return Cancelled
	case "tab", "shift+tab", "left", "right":
		d.Focus = 1 - d.Focus
	case "enter":
		if d.Focus == 0 {
			return Cancelled
		}
		if !d.Ready() {
			d.Hint = "type " + d.Expect + " to confirm"
			return Open
		}
		return Confirmed
	case "backspace":
		if d.Typed != "" {
			r := []rune(d.Typed)
			d.Typed = string(r[:len(r)-1])
		}
	default:
		if d.Expect != "" && msg.Text != "" {
			d.Typed += msg.Text
		}
	}
	return Open
}

// View renders the dialog as a box of the given width.
func (d *Confirm) View(th *theme.Theme, width int) string {
	w := min(max(width-8, 30), 72)
	inner := w - 4
	var lines []string
	lines = append(lines, th.Bold.Render(pad(d.Title, inner)))
	lines = append(lines, pad("", inner))
	for _, b := range d.Body {
		lines = append(lines, pad(b, inner))
	}
	if d.Expect != "" {
		lines = append(lines, pad("", inner))
		lines = append(lines, pad("Type "+d.Expect+" to confirm:", inner))
		lines = append(lines, pad("> "+d.Typed+"_", inner))
	}
	if d.Hint != "" && !d.Ready() {
		lines = append(lines, th.Warn.Render(pad(d.Hint, inner)))
	}
	lines = append(lines, pad("", inner))
	cancel, ok := "[ Cancel ]", "[ "+d.OK+" ]"
	if d.Focus == 0 {
		cancel = th.Selected.Render("> Cancel <")
	} else {
		ok = th.Selected.Render("> " + d.OK + " <")
	}
	btn := cancel + "   " + ok
	lines = append(lines, btn+strings.Repeat(" ", max(inner-ansi.StringWidth(btn), 0)))
	lines = append(lines, pad("tab: switch  enter: choose  esc: cancel", inner))
	var b strings.Builder
	b.WriteString("┌" + strings.Repeat("─", w-2) + "┐\n")
	for _, l := range lines {
		b.WriteString("│ " + l + " │\n")
	}
	b.WriteString("└" + strings.Repeat("─", w-2) + "┘")
	return b.String()
}

// pad pads or truncates s to exactly w cells.
func pad(s string, w int) string {
	if ansi.StringWidth(s) > w {
		s = ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", max(w-ansi.StringWidth(s), 0))
}
