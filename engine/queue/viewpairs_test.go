package queue

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"dispatch-tui/engine/view"
)

// A view read with pairs is the view read whole without its maps, and
// its tags are its maps' "k=v" sorted as strings: keys with bytes below
// '=', escapes, a key written twice (the last kept, as a map keeps it),
// the same entry as a label and as a constraint (both kept).
func TestReadViewPairsAsReadView(t *testing.T) {
	base := view.Container{State: view.Queued, Priority: 1}
	base.ID, base.Name, base.Command = "c-1", "n", []string{"true"}
	base.Reason, base.ReasonCode = "r", view.ReasonQuota
	cases := []struct {
		labels, constraints map[string]string
		supervisor          bool
	}{
		{},
		{labels: map[string]string{}},
		{labels: map[string]string{"a": "2", "a-b": "1", "a.b": "x", "ab": "", "": "e"}},
		{labels: map[string]string{"q\"uote": "tab\there", "é": "ü", "k": "v"}, constraints: map[string]string{"k": "v", "zone": "a"}, supervisor: true},
		{constraints: map[string]string{"gpu": "no"}},
	}
	for i, tc := range cases {
		c := base
		c.Labels, c.Scheduling.Constraints, c.Scheduling.Supervisor = tc.labels, tc.constraints, tc.supervisor
		j, err := AppendViewJSON(nil, &c)
		if err != nil {
			t.Fatal(err)
		}
		var whole, bare view.Container
		if !ReadView(j, &whole) {
			t.Fatalf("case %d: ReadView refused\n%s", i, j)
		}
		var p Pairs
		p.add(false, "left", "over") // reset by the read
		if !ReadViewPairs(j, &bare, &p) {
			t.Fatalf("case %d: ReadViewPairs refused\n%s", i, j)
		}
		want := whole
		want.Labels, want.Scheduling.Constraints = nil, nil
		if !reflect.DeepEqual(bare, want) {
			t.Errorf("case %d: read with pairs %#v, want %#v", i, bare, want)
		}
		if got, want := string(p.AppendTags(nil)), tagsOfMaps(whole.Labels, whole.Scheduling.Constraints); got != want {
			t.Errorf("case %d: tags %q, want %q", i, got, want)
		}
	}

	// A key written twice: json.Unmarshal keeps the last.
	j := []byte(`{"labels":{"k":"1","b":"2","k":"3"}}`)
	var m struct{ Labels map[string]string }
	if err := json.Unmarshal(j, &m); err != nil {
		t.Fatal(err)
	}
	var p Pairs
	r := recordReader{b: j[len(`{"labels":`):], pairs: &p}
	r.strMapOr(false)
	if r.bad {
		t.Fatal("the object was refused")
	}
	if got, want := string(p.AppendTags(nil)), tagsOfMaps(m.Labels, nil); got != want {
		t.Errorf("a key twice: tags %q, want %q", got, want)
	}
}

// tagsOfMaps is the maps' "k=v" sorted, joined by spaces.
func tagsOfMaps(ms ...map[string]string) string {
	var parts []string
	for _, m := range ms {
		for k, v := range m {
			parts = append(parts, k+"="+v)
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}
