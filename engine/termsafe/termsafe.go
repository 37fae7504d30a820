// Package termsafe shows text from users and programs (names, commands,
// reasons, logs) on a terminal without letting it drive the terminal:
// control characters are written out as escapes, so an escape sequence in a
// container's name cannot recolour the screen, retitle the window, move the
// cursor or hide what is shown. Both the CLI's tables and the console use
// it; JSON output and raw logs do not.
package termsafe

import (
	"strings"
	"unicode/utf8"
)

// Escape returns s with every character a terminal would act on instead of
// print written as an escape, the way Go quotes strings: \n \r \t \a \b \f
// \v, \x1b for other C0 controls and DEL, \u009b for C1 controls and for
// the invisible characters that reorder or break lines (bidirectional
// controls, U+2028, U+2029), and \xff for each byte that is not UTF-8.
// Backslashes are left alone, so paths and regular expressions read as
// written. s comes back as it is when there is nothing to escape.
func Escape(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	writeEscaped(&b, s[i:], false)
	return b.String()
}

// Lines splits text into lines for display: "\n" and "\r\n" end a line,
// tabs become spaces up to the next multiple of 8 columns, and everything
// else is escaped as by Escape.
func Lines(s string) []string {
	raw := strings.Split(s, "\n")
	for i, l := range raw {
		l = strings.TrimSuffix(l, "\r")
		if firstUnsafe(l) < 0 {
			raw[i] = l
			continue
		}
		var b strings.Builder
		b.Grow(len(l) + 16)
		writeEscaped(&b, l, true)
		raw[i] = b.String()
	}
	return raw
}

// Text is s escaped as by Lines, its lines joined again with "\n": for
// messages of several lines, such as errors that list choices.
func Text(s string) string {
	if firstUnsafe(s) < 0 {
		return s
	}
	return strings.Join(Lines(s), "\n")
}

// firstUnsafe returns the index of the first byte of s that is not
// printable ASCII and may need escaping, or -1.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f {
			if c >= utf8.RuneSelf && !needsEscape(s[i:]) {
				_, n := utf8.DecodeRuneInString(s[i:])
				i += n - 1
				continue
			}
			return i
		}
	}
	return -1
}

// needsEscape reports whether the rune (or invalid byte) starting s is
// escaped.
func needsEscape(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return (r == utf8.RuneError && n == 1) || unsafeRune(r)
}

// unsafeRune reports whether a terminal acts on r rather than printing it.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional controls: they reorder what follows
	case r == 0x2028, r == 0x2029:
		return true // line and paragraph separators
	}
	return false
}

const hexDigits = "0123456789abcdef"

// writeEscaped writes s escaped; with tabs set, s starts a line and tabs
// become spaces to the next 8-column stop (counting a rune as a column).
func writeEscaped(b *strings.Builder, s string, tabs bool) {
	col := 0
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[s[0]>>4])
			b.WriteByte(hexDigits[s[0]&0xf])
			col += 4
		case r == '\t' && tabs:
			pad := 8 - col%8
			b.WriteString("        "[:pad])
			col += pad
		case unsafeRune(r):
			col += writeRuneEscape(b, r)
		default:
			b.WriteString(s[:n])
			col++
		}
		s = s[n:]
	}
}

// writeRuneEscape writes the escape of r and returns its width.
func writeRuneEscape(b *strings.Builder, r rune) int {
	switch r {
	case '\a':
		b.WriteString(`\a`)
	case '\b':
		b.WriteString(`\b`)
	case '\f':
		b.WriteString(`\f`)
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	case '\t':
		b.WriteString(`\t`)
	case '\v':
		b.WriteString(`\v`)
	default:
		if r < 0x80 {
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[r>>4])
			b.WriteByte(hexDigits[r&0xf])
			return 4
		}
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hexDigits[(r>>shift)&0xf])
		}
		return 6
	}
	return 2
}
