package config

import (
	"strings"
	"testing"
)

func TestBudgets(t *testing.T) {
	c, err := Parse(doc(`
[dispatcher]
max_hourly_cost = 5
[[budget]]
label = "team=genomics"
max_hourly_cost = 2.5
`), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Dispatcher.MaxHourlyCost != 5 || len(c.Budgets) != 1 || c.Budgets[0] != (Budget{Label: "team=genomics", MaxHourlyCost: 2.5}) {
		t.Errorf("got fleet cap %v and budgets %+v", c.Dispatcher.MaxHourlyCost, c.Budgets)
	}
	if k, v := c.Budgets[0].LabelKV(); k != "team" || v != "genomics" {
		t.Errorf("LabelKV = %q, %q", k, v)
	}
	if d := Default(); d.Dispatcher.MaxHourlyCost != 0 || d.Budgets != nil {
		t.Errorf("default: fleet cap %v, budgets %+v; want none", d.Dispatcher.MaxHourlyCost, d.Budgets)
	}
}

func TestBudgetErrors(t *testing.T) {
	_, err := Parse(doc(`
[dispatcher]
max_hourly_cost = -1
[[budget]]
label = "team"
max_hourly_cost = "lots"
[[budget]]
label = "team=x"
max_hourly_cost = 0
[[budget]]
label = "team=x"
max_hourly_cost = 2
[[budget]]
label = "=x"
max_hourly_cost = 1
`), "config.toml")
	want := []string{
		"config.toml:2: dispatcher.max_hourly_cost: must be a number of dollars per hour, 0 for no cap (got -1)",
		`config.toml:4: budget[0].label: must be one container label as key=value, such as "team=genomics" (got "team")`,
		"config.toml:5: budget[0].max_hourly_cost: must be a number (got string)",
		"config.toml:8: budget[1].max_hourly_cost: must be a number of dollars per hour above 0 (got 0)",
		`config.toml:10: budget[2].label: "team=x" has two [[budget]] entries: keep one`,
		`config.toml:13: budget[3].label: must be one container label as key=value`,
	}
	if err == nil {
		t.Fatal("no error")
	}
	got := strings.Split(err.Error(), "\n")
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(got), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("error %d = %q\nwant prefix %q", i, got[i], w)
		}
	}
	// A fleet cap no type fits under is refused too.
	_, err = Parse(doc(`
[dispatcher]
max_hourly_cost = 0.01
`), "config.toml")
	if err == nil || !strings.Contains(err.Error(), "dispatcher.max_hourly_cost: is below the cheapest instance type's price") {
		t.Errorf("fleet cap below every price: %v", err)
	}
}
