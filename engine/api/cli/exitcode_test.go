package cli

import (
	"fmt"
	"strings"
	"testing"
)

// TestExitCodesByKind: a script tells why a command failed from its exit
// code alone, against a real engine: 3 for an id that is not there, 4
// for a verb the container's state forbids, 2 for a value the server
// refuses, 1 for failures of different kinds.
func TestExitCodesByKind(t *testing.T) {
	eng, url, ids := realServer(t, "live", "done")
	if _, err := eng.KillContainer(ids[1], "test", ""); err != nil {
		t.Fatal(err)
	}
	const missing = "c-0000000000000000"
	for _, tc := range []struct {
		args []string
		want int
		says string // on stderr
	}{
		{[]string{"kill", missing}, 3, "no such container"},
		{[]string{"priority", missing, "3"}, 3, "no such container"},
		{[]string{"logs", missing}, 3, "no such container"},
		{[]string{"hold", "i-nosuch"}, 3, "instance not found"},
		{[]string{"hold", ids[1]}, 4, "a finished container cannot be held"},
		{[]string{"priority", ids[1], "3"}, 4, "a finished container cannot be given a new priority"},
		{[]string{"kill", ids[1], missing}, 1, "2 of 2 failed"},
		{[]string{"hold", ids[0]}, 0, ""},
	} {
		code, _, errOut := runCLI(t, url, nil, "", tc.args...)
		if code != tc.want || !strings.Contains(errOut, tc.says) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d saying %q", strings.Join(tc.args, " "), code, errOut, tc.want, tc.says)
		}
	}
}

// TestExitCodeTable: every kind has its own code, and none is a usage
// error's but the invalid value's.
func TestExitCodeTable(t *testing.T) {
	seen := map[int]string{}
	for k, code := range exitCodes {
		if prev, dup := seen[code]; dup {
			t.Errorf("kinds %s and %s share exit %d", prev, k, code)
		}
		seen[code] = fmt.Sprint(k)
		if code == exitOK {
			t.Errorf("kind %s exits 0", k)
		}
	}
}
