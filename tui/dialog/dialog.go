// Package dialog is the confirmation dialog: Cancel is focused when it
// opens, tab/arrows move the focus, enter chooses, esc cancels. A typed
// confirmation (an id, or a count for bulk verbs) is entered in a bubbles
// textinput; once it matches, the focus moves to OK, so enter confirms.
// The body wraps (ids are never cut) and the box fits the height it is
// given, dropping spacing and then body lines, never the buttons.
package dialog

import (
	"dispatch-tui/engine/termsafe"
	"strings"

	"dispatch-tui/tui/theme"

	"charm.land/bubbles/v2/textinput"
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
	// Focus: 0 = Cancel (default), 1 = OK.
	Focus int
	Hint  string // shown after a failed attempt

	input                 textinput.Model
	styled, dark, noColor bool // the input's styles are the theme's
}

// New returns a dialog with Cancel focused.
func New(title, ok, expect string, body ...string) *Confirm {
	d := &Confirm{Title: title, OK: ok, Expect: expect, Body: body}
	d.input = newInput()
	return d
}

func newInput() textinput.Model {
	in := textinput.New()
	in.Prompt = "> "
	st := in.Styles()
	st.Cursor.Blink = false // no timer: the cursor is drawn steady
	in.SetStyles(st)
	in.Focus()
	return in
}

// Typed returns the confirmation typed so far.
func (d *Confirm) Typed() string { return d.input.Value() }

// Ready reports whether the typed confirmation matches.
func (d *Confirm) Ready() bool { return d.Expect == "" || d.Typed() == d.Expect }

// Update handles one key.
func (d *Confirm) Update(msg tea.KeyPressMsg) Result {
	if d.Expect != "" && d.input.Prompt == "" {
		d.input = newInput() // a Confirm built as a literal
	}
	switch k := msg.String(); k {
	case "esc", "ctrl+c":
		return Cancelled
	case "tab", "shift+tab", "left", "right":
		d.Focus = 1 - d.Focus
		return Open
	case "enter":
		if d.Focus == 0 {
			return Cancelled
		}
		if !d.Ready() {
			d.Hint = "type " + d.Expect + " to confirm"
			return Open
		}
		return Confirmed
	}
	if d.Expect == "" {
		return Open
	}
	was := d.Ready()
	d.input, _ = d.input.Update(msg)
	switch {
	case d.Ready() && !was:
		d.Focus = 1 // typed in full: enter now confirms
	case was && !d.Ready():
		d.Focus = 0 // no longer matches: back to the safe choice
	}
	return Open
}

// View renders the dialog as a box at most width cells wide and maxH
// lines high (0 = no limit).
func (d *Confirm) View(th *theme.Theme, width, maxH int) string {
	w := min(max(width-8, 30), 72, max(width, 12))
	inner := w - 4
	wrap := func(s string) []string { return termsafe.WrapWords(s, inner) }

	title := wrap(d.Title)
	var body []string
	for _, b := range d.Body {
		body = append(body, wrap(b)...)
	}
	var typed []string
	if d.Expect != "" {
		typed = append(wrap("Type "+d.Expect+" to confirm:"), d.inputView(th, inner))
	}
	var hint []string
	if d.Hint != "" && !d.Ready() {
		hint = wrap(d.Hint)
	}
	keysLine := []string{"tab: switch  enter: choose  esc: cancel"}
	buttons := []string{d.buttons(th)}

	// Fit the height: first the blank lines, then the key hint, then
	// body lines from the end (the title, input and buttons stay).
	spacing := true
	count := func() int {
		n := 2 + len(title) + len(body) + len(typed) + len(hint) + len(buttons) + len(keysLine)
		if spacing {
			n += 1 + 1
			if len(typed) > 0 {
				n++
			}
		}
		return n
	}
	if maxH > 0 {
		if count() > maxH {
			spacing = false
		}
		if count() > maxH {
			keysLine = nil
		}
		for count() > maxH && len(body) > 0 {
			body = body[:len(body)-1]
			if len(body) > 0 {
				body[len(body)-1] = "…"
			}
		}
	}
	var lines []string
	add := func(ls ...string) {
		for _, l := range ls {
			lines = append(lines, pad(l, inner))
		}
	}
	for _, l := range title {
		lines = append(lines, th.Bold.Render(pad(l, inner)))
	}
	if spacing {
		add("")
	}
	add(body...)
	if len(typed) > 0 {
		if spacing {
			add("")
		}
		add(typed...)
	}
	for _, l := range hint {
		lines = append(lines, th.Warn.Render(pad(l, inner)))
	}
	if spacing {
		add("")
	}
	add(buttons...)
	add(keysLine...)
	var b strings.Builder
	b.WriteString("┌" + strings.Repeat("─", w-2) + "┐\n")
	for _, l := range lines {
		b.WriteString("│ " + l + " │\n")
	}
	b.WriteString("└" + strings.Repeat("─", w-2) + "┘")
	return b.String()
}

func (d *Confirm) inputView(th *theme.Theme, inner int) string {
	if d.input.Prompt == "" {
		d.input = newInput()
	}
	if th.Dark != d.dark || th.NoColor != d.noColor || !d.styled {
		st := textinput.DefaultStyles(th.Dark)
		if th.NoColor {
			st = textinput.Styles{}
		}
		st.Cursor.Blink = false
		d.input.SetStyles(st)
		d.dark, d.noColor, d.styled = th.Dark, th.NoColor, true
	}
	d.input.SetWidth(max(inner-3, 1))
	return d.input.View()
}

func (d *Confirm) buttons(th *theme.Theme) string {
	cancel, ok := "[ Cancel ]", "[ "+d.OK+" ]"
	if d.Focus == 0 {
		cancel = th.Selected.Render("> Cancel <")
	} else {
		ok = th.Selected.Render("> " + d.OK + " <")
	}
	return cancel + "   " + ok
}

// pad pads or truncates s to exactly w cells.
func pad(s string, w int) string {
	if ansi.StringWidth(s) > w {
		s = ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", max(w-ansi.StringWidth(s), 0))
}
