// How far the first read of a large queue has got, for the header while
// the console waits for it.

package tui

import "fmt"

// progressor is a backend that can say how far a read of every container
// has got (backend.Remote: an attached console reads a large queue in
// pages).
type progressor interface {
	Progress() (loaded, total int)
}

// loadingText is what the console shows before its first snapshot:
// "loading 340,000 of 1,000,000" while a backend reads pages, else
// "loading…".
func (m *Model) loadingText() string {
	if p, ok := m.be.(progressor); ok {
		if done, total := p.Progress(); total > 0 {
			return fmt.Sprintf("loading %s of %s", thousands(done), thousands(total))
		}
	}
	return "loading…"
}

// thousands writes n with a comma between groups of three digits.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
