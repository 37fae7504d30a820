package tui

import (
	"net/http/httptest"
	"testing"

	"dispatch-tui/cloud/fake"
	"dispatch-tui/engine"
	"dispatch-tui/engine/api"
	"dispatch-tui/engine/enginetest"
	"dispatch-tui/engine/view"
	"dispatch-tui/tui/backend"
)

// An attached console's refresh shows a changed container as it is now
// and flags it, and only it, as changed (the table reads the rows the
// refresh changed in place; it keeps no rows of its own).
func TestRefreshFlagsOnlyChangedRows(t *testing.T) {
	env := enginetest.New(t, enginetest.Config(t), fake.Options{}, engine.Options{})
	if err := env.Engine.Pause("test", ""); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 4 {
		ids = append(ids, env.Submit(view.Spec{Command: []string{"true"}}))
	}
	srv := httptest.NewServer(api.NewServer(api.ServerOptions{Engine: env.Engine}))
	t.Cleanup(srv.Close)
	m, err := newModel(Options{Backend: backend.NewRemote(api.NewClient(srv.URL, ""), "remote"), Theme: "dark"}, fixedClock)
	if err != nil {
		t.Fatal(err)
	}
	m.tick = stillTick
	size(m, 160, 40)
	fetch := func() {
		t.Helper()
		m.fetching = false
		runCmd(m, m.startFetch())
		if m.snapErr != nil {
			t.Fatal(m.snapErr)
		}
	}
	fetch()
	press(m, "2")
	cells := func(id string) []string {
		t.Helper()
		r, ok := m.table().Row(id)
		if !ok {
			t.Fatalf("no row %s in the containers view", id)
		}
		return r.Cells
	}
	if _, err := env.Engine.HoldContainer(ids[1], "test", ""); err != nil {
		t.Fatal(err)
	}
	fetch()
	if got := cells(ids[1])[2]; got != "Queued held" {
		t.Errorf("the held container's state reads %q after the refresh, want %q", got, "Queued held")
	}
	if !m.table().Changed(ids[1]) {
		t.Errorf("the held container %s is not flagged as changed", ids[1])
	}
	for _, id := range []string{ids[0], ids[2], ids[3]} {
		if m.table().Changed(id) {
			t.Errorf("%s did not change, yet it is flagged as changed", id)
		}
	}
}
