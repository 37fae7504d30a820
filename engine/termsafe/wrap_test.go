package termsafe

import (
	"strings"
	"testing"
)

func TestWrapWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		w    int
		want []string
	}{
		{"c-000006 c-000007 c-000008", 17, []string{"c-000006 c-000007", "c-000008"}},
		{"c-000006 c-000007", 12, []string{"c-000006", "c-000007"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"", 10, []string{""}},
	} {
		if got := WrapWords(tc.in, tc.w); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("WrapWords(%q, %d) = %q, want %q", tc.in, tc.w, got, tc.want)
		}
	}
}
