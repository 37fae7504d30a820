package cli

import (
	"strconv"
	"strings"
	"testing"
)

// TestLsEventsNewestFirst: ls events shows the newest first, says how many
// it did not show and how to see them, and takes --since as a sequence
// number or a duration.
func TestLsEventsNewestFirst(t *testing.T) {
	eng, url, _ := realServer(t, "a", "b", "c", "d", "e", "f", "g", "h")
	all, err := eng.Events(0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	newest := all[len(all)-1].Seq
	code, out, errOut := runCLI(t, url, nil, "", "ls", "events", "--limit", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[1], strconv.FormatUint(newest, 10)+" ") {
		t.Fatalf("want a header, the newest three (from %d) and a footer:\n%s", newest, out)
	}
	want := "(3 of " + strconv.Itoa(len(all)) + " shown, newest first; older: --before " + strconv.FormatUint(newest-2, 10)
	if !strings.HasPrefix(lines[4], want) {
		t.Errorf("footer %q, want it to start %q", lines[4], want)
	}
	code, out, _ = runCLI(t, url, nil, "", "ls", "events", "--since", strconv.FormatUint(newest-2, 10), "-o", "name")
	if code != 0 || out != strconv.FormatUint(newest, 10)+"\n"+strconv.FormatUint(newest-1, 10)+"\n" {
		t.Errorf("--since %d: exit %d, %q", newest-2, code, out)
	}
	// The engine's clock is months behind: none in the last ten minutes,
	// all within a long duration.
	if code, out, _ = runCLI(t, url, nil, "", "ls", "events", "--since", "10m", "-o", "name"); code != 0 || out != "" {
		t.Errorf("--since 10m: exit %d, %q", code, out)
	}
	if code, out, _ = runCLI(t, url, nil, "", "ls", "events", "--since", "100000h", "-o", "name"); code != 0 || strings.Count(out, "\n") != len(all) {
		t.Errorf("--since 100000h: exit %d, %d lines, want %d", code, strings.Count(out, "\n"), len(all))
	}
	if code, _, errOut = runCLI(t, url, nil, "", "ls", "events", "--since", "banana"); code != 2 || !strings.Contains(errOut, "duration such as 10m") {
		t.Errorf("--since banana: exit %d, %q", code, errOut)
	}
}
