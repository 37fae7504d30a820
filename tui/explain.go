// What a verb does, in the words of its dialog and its flash.

package tui

// What a verb does, in the words of its dialog: one text for one row or
// several (a bulk dialog explains as a single one does), and the words of
// the flash that reports it.

import (
	"strings"
)

// explain says what verb does to n rows of view v; id names the row when
// n is 1.
func explain(verb string, v viewID, n int, id string) string {
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
	case v == vInstances && verb == "kill":
		return "Destroy " + what + " now. " + pick("Its", "Their") + " containers are requeued at once (or cancelled). If " +
			pick("it", "one") + " cannot be reached, " + pick("their", "the") + " old attempts may still be running there."
	case v == vInstances && verb == "hold":
		return "Start no new containers on " + pick("it", "them") + " and never shut " + pick("it", "them") +
			" down automatically; running containers continue."
	case v == vInstances && verb == "drain":
		return "Start no new containers on " + pick("it", "them") + "; shut " + pick("it", "each") + " down once idle."
	case v == vInstances && verb == "run":
		return "Back to normal: containers start on " + pick("it", "them") + " again, and " + pick("it shuts", "they shut") +
			" down when idle as configured."
	case verb == "kill":
		return "Kill " + what + " (SIGTERM, then SIGKILL). " + pick("It ends", "They end") + " Cancelled."
	case verb == "hold":
		return "Hold " + what + ": not started until released."
	case verb == "release":
		return "Release " + what + ": scheduled again."
	case verb == prioUpLabel, verb == prioDownLabel:
		return strings.ToUpper(verb[:1]) + verb[1:] + " of " + what + " by 1."
	}
	return strings.ToUpper(verb[:1]) + verb[1:] + " " + what + "."
}

// Labels of the priority steps (+ and -): what they do, not the value
// they add (the flash of "priority -1" read as "set to -1").
const (
	prioUpLabel   = "raise the priority"
	prioDownLabel = "lower the priority"
)

// kindOf names a view's rows.
func kindOf(v viewID) string {
	if v == vInstances {
		return "instance"
	}
	return "container"
}

// title is a dialog's title: "Kill 3 containers?", "Drain instance i-1?".
func title(verb string, v viewID, n int, id string) string {
	what := kindOf(v) + " " + id
	if n != 1 {
		what = plural(n, kindOf(v), kindOf(v)+"s")
	}
	if verb == prioUpLabel || verb == prioDownLabel {
		what = "of " + what
	}
	return strings.ToUpper(verb[:1]) + verb[1:] + " " + what + "?"
}
