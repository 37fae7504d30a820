// What a verb does, in the words of its dialog and its flash.

package tui

// What a verb does, in the words of its dialog: one text for one row or
// several (a bulk dialog explains as a single one does), and the words of
// the flash that reports it.

import (
	"strings"

	"dispatch-tui/engine/view"
)

// explain says what verb c does to n rows; id names the row when n is 1.
func explain(c chosen, n int, id string) string {
	v := c.view()
	one := n == 1
	pick := func(single, many string) string {
		if one {
			return single
		}
		return many
	}
	what := kindOf(v) + " " + id
	if !one {
		what = "these " + plural(n, kindOf(v), kindOf(v)+"s")
	}
	switch {
	case c.inst == view.InstanceKill:
		return "Destroy " + what + " now. " + pick("Its", "Their") + " containers are requeued at once (or cancelled). If " +
			pick("it", "one") + " cannot be reached, " + pick("their", "the") + " old attempts may still be running there."
	case c.inst == view.InstanceHold:
		return "Start no new containers on " + pick("it", "them") + " and never shut " + pick("it", "them") +
			" down automatically; running containers continue."
	case c.inst == view.InstanceDrain:
		return "Start no new containers on " + pick("it", "them") + "; shut " + pick("it", "each") + " down once idle."
	case c.inst == view.InstanceRun:
		return "Back to normal: containers start on " + pick("it", "them") + " again, and " + pick("it shuts", "they shut") +
			" down when idle as configured."
	case c.ctr == view.ContainerKill:
		return "Kill " + what + " (SIGTERM, then SIGKILL). " + pick("It ends", "They end") + " Cancelled."
	case c.ctr == view.ContainerHold:
		return "Hold " + what + ": not started until released."
	case c.ctr == view.ContainerRelease:
		return "Release " + what + ": scheduled again."
	case c.ctr == view.ContainerPriority:
		return capital(c.label()) + " of " + what + " by 1."
	}
	return capital(c.label()) + " " + what + "."
}

// capital is s with its first letter in upper case.
func capital(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// kindOf names a view's rows.
func kindOf(v viewID) string {
	if v == vInstances {
		return "instance"
	}
	return "container"
}

// title is a dialog's title: "Kill 3 containers?", "Drain instance i-1?".
func title(c chosen, n int, id string) string {
	v := c.view()
	what := kindOf(v) + " " + id
	if n != 1 {
		what = plural(n, kindOf(v), kindOf(v)+"s")
	}
	if c.ctr == view.ContainerPriority {
		what = "of " + what
	}
	return capital(c.label()) + " " + what + "?"
}
