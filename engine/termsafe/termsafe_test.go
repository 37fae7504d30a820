package termsafe

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain text", "plain text"},
		{"héllo wörld 日本 🙂", "héllo wörld 日本 🙂"},
		{`C:\path\to [a-z]+\d`, `C:\path\to [a-z]+\d`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"a\rb", `a\rb`},
		{"bell\x07", `bell\a`},
		{"csi\u009b2J", `csi\u009b2J`},
		{"\x1b]0;title\x07", `\x1b]0;title\a`},
		{"tab\tnew\nline", `tab\tnew\nline`},
		{"\x00\x7f\b\f\v", `\x00\x7f\b\f\v`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"rtl \u202eevil\u202c", `rtl \u202eevil\u202c`},
		{"line\u2028sep", `line\u2028sep`},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"one", []string{"one"}},
		{"a\nb\r\nc", []string{"a", "b", "c"}},
		{"col\tnext\tx", []string{"col     next    x"}},
		{"\x1b[2Jcleared\rover", []string{`\x1b[2Jcleared\rover`}},
		{"\x1b\tt", []string{`\x1b    t`}},
	} {
		if got := Lines(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Lines(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestEscapeAllocates nothing for text with nothing to escape.
func TestEscapeAllocatesNothing(t *testing.T) {
	s := strings.Repeat("ordinary text é ", 10)
	if n := testing.AllocsPerRun(100, func() { Escape(s) }); n != 0 {
		t.Errorf("Escape allocated %v times", n)
	}
}

// FuzzEscape: the output is valid UTF-8 with no character a terminal acts
// on, text with nothing to escape comes back unchanged, and Lines never
// returns a line that holds a control character.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[31m", "\xff", "a\r\nb\tc", "\u009b\u202e", "日本\x07"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		check := func(what, out string) {
			if !utf8.ValidString(out) {
				t.Fatalf("%s(%q) = %q: not UTF-8", what, s, out)
			}
			for _, r := range out {
				if unsafeRune(r) {
					t.Fatalf("%s(%q) = %q: holds %U", what, s, out, r)
				}
			}
		}
		out := Escape(s)
		check("Escape", out)
		if firstUnsafe(s) < 0 && out != s {
			t.Fatalf("Escape(%q) = %q: changed safe text", s, out)
		}
		for _, l := range Lines(s) {
			check("Lines", l)
		}
	})
}

func TestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"one line", "one line"},
		{"refused\n  types: a\x1b[31m\r\n  b", "refused\n  types: a\\x1b[31m\n  b"},
	} {
		if got := Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
