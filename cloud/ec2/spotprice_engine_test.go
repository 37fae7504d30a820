//go:build linux

package ec2_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/cloud/ec2/ec2test"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/cost"
	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// A spot instance is billed at EC2's spot price, read from the price
// history: a change mid-life changes what it costs from then on, and when
// the history is unavailable it is billed at the configured price, with
// an event saying so. Prices are dollars a second (3600 $/h) so that the
// real-time slopes read plainly.
func TestEngineSpotPriceHistory(t *testing.T) {
	const configured, first, second = 0.01, 3600.0, 7200.0
	srv := ec2test.Start(t, ec2test.Options{ShutdownTime: time.Second})
	srv.AddSpotPrices(ec2test.SpotPrice{Type: "t3.small", Zone: "eu-west-1a", Price: first, At: time.Now().Add(-time.Hour)})
	eng := engineOn(t, srv, func(cfg *config.Config) {
		cfg.InstanceTypes = []cloud.InstanceType{{Name: "spot", ProviderType: "t3.small", VCPUs: 2, RAM: 2 << 30, Price: configured, Preemptible: true}}
		cfg.Cloud.EC2.SpotPriceInterval = time.Second
	})
	preemptible := true
	c, err := eng.Submit(queue.Spec{
		Command:            []string{"sleep", "300"},
		RuntimeConstraints: queue.Constraints{VCPUs: 2, RAM: 256 << 20},
		Scheduling:         queue.Scheduling{Preemptible: &preemptible},
	}, "test")
	if err != nil {
		t.Fatal(err)
	}
	burn := func() (view.InstanceCost, time.Time) {
		r := eng.Cost(cost.By{Field: "type"}, time.Time{})
		if len(r.Instances) != 1 {
			return view.InstanceCost{}, r.To
		}
		return r.Instances[0], r.To
	}
	dump := func() string {
		var b strings.Builder
		got, _ := eng.Container(c.ID)
		i, _ := burn()
		fmt.Fprintf(&b, "\n  container %s on %s; instance %+v; DescribeSpotPriceHistory calls %d", got.State, got.InstanceID, i, srv.Calls("DescribeSpotPriceHistory"))
		if evs, err := eng.Events(0, 100000); err == nil {
			for _, ev := range evs[max(0, len(evs)-10):] {
				fmt.Fprintf(&b, "\n  event %+v", ev)
			}
		}
		return b.String()
	}
	// rateIs waits for the instance to be billed at rate, then checks what
	// it costs over a few passes grows at that rate and no other.
	rateIs := func(what string, rate float64) {
		t.Helper()
		stepping(eng, dump).Until(t, what, 30*time.Second, func() bool {
			got, _ := eng.Container(c.ID)
			i, _ := burn()
			return got.State == queue.Running && i.RatePerHour == rate
		})
		i1, t1 := burn()
		// Passes over 50 ms at least: over a few microseconds the cost
		// grows by less than the float64 rounding of the total allows
		// to measure to 1e-6 (failed once, at 150 µs).
		i2, t2 := i1, t1
		for n := 0; n < 3 || t2.Sub(t1) < 50*time.Millisecond; n++ {
			time.Sleep(10 * time.Millisecond) // time for the cost to grow, not a wait on state
			eng.Step()
			eng.Settle()
			i2, t2 = burn()
		}
		if i2.RatePerHour != rate {
			return // it moved again meanwhile: the slope spans two prices
		}
		slope := (i2.Dollars - i1.Dollars) / t2.Sub(t1).Hours()
		if t2.Sub(t1) <= 0 || math.Abs(slope-rate) > rate*1e-6 {
			t.Errorf("%s: the instance cost $%.6f more over %v: $%.6f/h, want $%.2f/h%s", what, i2.Dollars-i1.Dollars, t2.Sub(t1), slope, rate, dump())
		}
	}
	rateIs("the spot instance billed at the history's price", first)
	srv.AddSpotPrices(ec2test.SpotPrice{Type: "t3.small", Zone: "eu-west-1a", Price: second, At: time.Now().Add(-time.Second)})
	rateIs("the spot instance billed at the new price", second)

	srv.Configure(func(f *ec2test.Faults) {
		f.Errors = map[string]string{"DescribeSpotPriceHistory": "UnauthorizedOperation"}
	})
	rateIs("the configured price while the history is unavailable", configured)
	evs, err := eng.Events(0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	said := 0
	for _, ev := range evs {
		if ev.Kind == "price" && strings.Contains(ev.Action+" "+ev.Reason, "t3.small unavailable, billed at the configured $0.0100/h") {
			said++
		}
	}
	if said != 1 {
		t.Errorf("%d events say the spot price is unavailable, want 1:%s", said, dump())
	}
}
