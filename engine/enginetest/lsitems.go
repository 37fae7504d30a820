// What `dispatch-tui ls … -o json` prints, read back by the CLI's end-to-end tests.

package enginetest

import (
	"encoding/json"
	"testing"
)

// LsItem is one item of `ls … -o json`: the fields the tests look at, of
// instances and containers alike.
type LsItem struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	State        string   `json:"state"`
	IdleBehavior string   `json:"idle_behavior"`
	InstanceID   string   `json:"instance_id"`
	Priority     int      `json:"priority"`
	Held         bool     `json:"held"`
	Reason       string   `json:"reason"`
	ReasonCode   string   `json:"reason_code"`
	ExitCode     *int     `json:"exit_code"`
	Attempts     int      `json:"attempts"`
	Containers   []string `json:"containers"`
}

// LsItems reads the output of `ls … -o json` into its items by id,
// failing t when it is not such a listing.
func LsItems(t testing.TB, out string) map[string]LsItem {
	t.Helper()
	var resp struct {
		Items []LsItem `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("ls -o json printed no listing (%v): %q", err, out)
	}
	items := make(map[string]LsItem, len(resp.Items))
	for _, it := range resp.Items {
		items[it.ID] = it
	}
	return items
}
