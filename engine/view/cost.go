// The cost report as the edge shows it (GET /v1/cost, `dispatch-tui cost`,
// the console's :cost view): the ledger's sums, waste and projection, the
// dollar caps, the live instances' burn and the queued work's estimate
// (docs/design.md §6.1).

package view

import (
	"fmt"
	"strings"
	"time"
)

// CostKind is what an instance was doing while it cost: boot, idle,
// running or drain (engine/cost names them).
type CostKind string

// CostGroup is the containers of one key and what they cost.
type CostGroup struct {
	Key        string  `json:"key"`
	Dollars    float64 `json:"dollars"`
	Containers int     `json:"containers"`
}

// CostWaste is what instances of one type cost while not running
// containers.
type CostWaste struct {
	Type    string   `json:"type"`
	Kind    CostKind `json:"kind"`
	Dollars float64  `json:"dollars"`
	Share   float64  `json:"share"` // of the bill, 0..1
}

// CostProjection is the fleet's burn rate now and what the day and the
// month cost at it (UTC days and months).
type CostProjection struct {
	RatePerHour float64 `json:"rate_per_hour"`
	Today       float64 `json:"today"`
	Day         float64 `json:"day"`
	Month       float64 `json:"month"`
}

// BudgetLine is one dollar cap and the $/h it caps now. Over: the rate is
// past the limit (it was lowered below it): nothing new is created under
// it, and nothing is drained for it.
type BudgetLine struct {
	Name        string  `json:"name"`
	RatePerHour float64 `json:"rate_per_hour"`
	Limit       float64 `json:"limit"`
	Over        bool    `json:"over,omitempty"`
}

// InstanceCost is one instance not gone: its price now and what it has
// cost since the ledger first saw it.
type InstanceCost struct {
	ID          string  `json:"id"`
	Type        string  `json:"type"`
	RatePerHour float64 `json:"rate_per_hour"`
	Dollars     float64 `json:"dollars"`
}

// QueuedLine is the waiting containers locked to one type: their estimated
// cost is the type's price × the median run time of the finished
// containers that ran on it, each (as if it had an instance to itself).
// Known is false when none has finished on the type: then no dollars are
// estimated.
type QueuedLine struct {
	Type         string        `json:"type"`
	Containers   int           `json:"containers"`
	PricePerHour float64       `json:"price_per_hour"`
	MedianRun    time.Duration `json:"median_run"`
	Finished     int           `json:"finished"` // runs the median is taken over
	Known        bool          `json:"known"`
	Dollars      float64       `json:"dollars"`
}

// QueuedRange is the waiting containers not locked to a type yet whose
// constraints allow the same types: the cheapest type that holds them and
// those priced within max_price_factor of it, any of which the scheduler
// may choose. Each would cost between the cheapest and the dearest of
// those types' price × median run (types no container has finished on
// are left out of the range); Known is false when that is every type.
type QueuedRange struct {
	Types      []string `json:"types"` // cheapest first
	Containers int      `json:"containers"`
	Known      bool     `json:"known"`
	Low        float64  `json:"low"`  // Containers × the cheapest estimate
	High       float64  `json:"high"` // Containers × the dearest estimate
}

// QueuedCost is what the containers waiting now would cost: the locked
// ones exactly by their type (Dollars), the others as a range over the
// types they may get (Low and High include Dollars). Unknown counts locked
// containers and Untyped unlocked ones that could not be estimated: no
// container has finished on their types, or no type holds them.
type QueuedCost struct {
	Lines   []QueuedLine  `json:"lines,omitempty"`
	Ranges  []QueuedRange `json:"ranges,omitempty"`
	Dollars float64       `json:"dollars"` // the known lines' sum
	Low     float64       `json:"low"`
	High    float64       `json:"high"`
	Unknown int           `json:"unknown"`
	Untyped int           `json:"untyped"`
}

// CostReport is what the instances cost over [From, To), summed By a
// label, the type or the state, with the waste lines, the projection, the
// dollar caps as the last pass measured them, the live instances and the
// queued work's estimate.
type CostReport struct {
	From       time.Time      `json:"from"`
	To         time.Time      `json:"to"`
	By         string         `json:"by"`
	Bill       float64        `json:"bill"`      // every instance's dollars
	Allocated  float64        `json:"allocated"` // of which containers bear
	Groups     []CostGroup    `json:"groups"`
	Waste      []CostWaste    `json:"waste"`
	Projection CostProjection `json:"projection"`
	Budgets    []BudgetLine   `json:"budgets,omitempty"`
	Instances  []InstanceCost `json:"instances,omitempty"`
	Queued     *QueuedCost    `json:"queued,omitempty"`
}

// CostBy is what a report sums containers' costs by: a label's value (Label
// set), or the field "type" (the instance type they ran on) or "state"
// (their state now).
type CostBy struct {
	Label string
	Field string
}

// CostByNames lists the accepted --by values, for help and errors.
const CostByNames = "label=KEY, type or state"

// ParseCostBy reads a --by value: "label=team", "type" or "state".
func ParseCostBy(s string) (CostBy, error) {
	switch {
	case s == "type" || s == "state":
		return CostBy{Field: s}, nil
	case strings.HasPrefix(s, "label="):
		if k := strings.TrimPrefix(s, "label="); k != "" {
			return CostBy{Label: k}, nil
		}
	}
	return CostBy{}, fmt.Errorf("cannot sum costs by %q: use %s", s, CostByNames)
}

// String is b as ParseCostBy reads it.
func (b CostBy) String() string {
	if b.Label != "" {
		return "label=" + b.Label
	}
	return b.Field
}
