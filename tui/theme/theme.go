// Package theme holds the console's styles for dark and light terminals and
// the NO_COLOR variant (no colours; states are always shown as text).
package theme

import (
	"image/color"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// Paint wraps text in precomputed SGR sequences. It is much cheaper than a
// lipgloss.Style render and is what the table uses for every row.
type Paint struct{ pre, post string }

// Render returns s painted.
func (p Paint) Render(s string) string {
	if p.pre == "" {
		return s
	}
	return p.pre + s + p.post
}

// Empty reports whether the paint adds nothing.
func (p Paint) Empty() bool { return p.pre == "" }

func paint(s ansi.Style) Paint {
	if len(s) == 0 {
		return Paint{}
	}
	return Paint{pre: s.String(), post: ansi.ResetStyle}
}

// Theme is the set of paints the views use.
type Theme struct {
	Dark    bool
	NoColor bool

	Title, Header, Dim, Bold   Paint
	FlashOK, FlashErr, Warn    Paint
	TableHeader, Cursor, Mark  Paint
	Changed, Pending, Selected Paint
	Match                      Paint // a search match (the current one is Selected)
	states                     map[string]Paint
	rows                       map[string]Paint // states that paint their whole row
}

// New builds a theme. mode is auto, dark or light; dark is what auto
// resolves to (from the terminal's background colour).
func New(mode string, dark, noColor bool) *Theme {
	switch mode {
	case "dark":
		dark = true
	case "light":
		dark = false
	}
	t := &Theme{Dark: dark, NoColor: noColor, states: map[string]Paint{}, rows: map[string]Paint{}}
	if noColor {
		// Attributes only: bold, reverse, underline are not colours.
		t.Title = paint(ansi.Style{}.Bold())
		t.Bold = t.Title
		t.Header = Paint{}
		t.TableHeader = paint(ansi.Style{}.Bold().Underline(true))
		t.Cursor = paint(ansi.Style{}.Reverse(true))
		t.FlashOK = Paint{}
		t.FlashErr = paint(ansi.Style{}.Bold())
		t.Warn = paint(ansi.Style{}.Bold())
		t.Changed = paint(ansi.Style{}.Bold())
		t.Mark = paint(ansi.Style{}.Underline(true))
		t.Selected = t.Cursor
		t.Match = paint(ansi.Style{}.Underline(true))
		t.states[StateUnreachable] = t.Bold
		t.states[StateFailed] = t.Bold
		// Whole rows in reverse video: failures stand out without colour.
		t.rows[StateUnreachable] = paint(ansi.Style{}.Bold())
		t.rows[StateFailed] = paint(ansi.Style{}.Bold())
		return t
	}
	c := func(light, darkC string) color.Color {
		return lipgloss.LightDark(dark)(lipgloss.Color(light), lipgloss.Color(darkC))
	}
	fg := func(light, d string) ansi.Style { return ansi.Style{}.ForegroundColor(c(light, d)) }
	t.Title = paint(fg("#005f87", "#5fd7ff").Bold())
	t.Bold = paint(ansi.Style{}.Bold())
	t.Header = paint(fg("#303030", "#d0d0d0"))
	t.Dim = paint(fg("#8a8a8a", "#6c6c6c"))
	t.FlashOK = paint(fg("#00875f", "#5fd787"))
	t.FlashErr = paint(fg("#d70000", "#ff5f5f").Bold())
	t.Warn = paint(fg("#af5f00", "#ffaf00").Bold())
	t.TableHeader = paint(fg("#005f87", "#87afd7").Bold())
	t.Cursor = paint(ansi.Style{}.BackgroundColor(c("#d7d7ff", "#3a3a6a")).Bold())
	t.Mark = paint(fg("#af00af", "#ff87ff"))
	t.Changed = paint(ansi.Style{}.BackgroundColor(c("#ffffd7", "#303000")))
	t.Pending = paint(fg("#8a8a8a", "#8a8a8a").Italic(true))
	t.Selected = paint(fg("#005f87", "#5fd7ff").Reverse(true))
	t.Match = paint(ansi.Style{}.BackgroundColor(c("#ffd787", "#5f5f00")).Underline(true))
	green, yellow, blue, red, grey := fg("#00875f", "#5fd787"), fg("#af8700", "#ffd75f"),
		fg("#005fd7", "#5fafff"), fg("#d70000", "#ff5f5f"), fg("#8a8a8a", "#8a8a8a")
	t.states[StateUnreachable] = paint(red.Bold().Reverse(true))
	t.states[StateFailed] = paint(red.Bold())
	t.rows[StateUnreachable] = paint(fg("#d70000", "#ff8787").Bold())
	t.rows[StateFailed] = paint(fg("#d70000", "#ff8787"))
	for s, st := range map[string]ansi.Style{
		"running": green, "idle": blue, "booting": yellow, "unknown": grey, "shutdown": red, "refused": red,
		"Running": green, "Queued": yellow, "Locked": blue, "Complete": grey, "Cancelled": red,
	} {
		t.states[s] = paint(st)
	}
	return t
}

// StateUnreachable is the row state, and the STATE text, of an instance
// whose probes are failing: a state of its own for the eye, although the
// pool keeps its real state (shown in the details).
const StateUnreachable = "unreach"

// StateFailed is the row state of a container that completed with a
// non-zero exit code: it stands out from the ones that succeeded.
const StateFailed = "failed"

// State returns the paint for a state name (none when unknown or NO_COLOR).
func (t *Theme) State(s string) Paint { return t.states[s] }

// Row returns the paint of a whole row in state s: failures (unreachable
// instances, failed containers) stand out from the rest of the table.
// Empty for the other states.
func (t *Theme) Row(s string) Paint { return t.rows[s] }
