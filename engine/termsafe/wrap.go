// Wrapping plain text at spaces for a terminal, shared by the console's
// dialogs and the CLI's records.

package termsafe

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// WrapWords wraps plain text at spaces only (ids like c-000007 are never
// split at their hyphen); a word longer than the width is cut into pieces.
func WrapWords(s string, w int) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		for ansi.StringWidth(word) > w {
			if line != "" {
				out = append(out, line)
				line = ""
			}
			out = append(out, ansi.Truncate(word, w, ""))
			word = ansi.TruncateLeft(word, w, "")
		}
		switch {
		case line == "":
			line = word
		case ansi.StringWidth(line)+1+ansi.StringWidth(word) <= w:
			line += " " + word
		default:
			out = append(out, line)
			line = word
		}
	}
	if line != "" || len(out) == 0 {
		out = append(out, line)
	}
	return out
}
