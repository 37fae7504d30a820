// The leadership metrics of a node of a cluster (docs/design.md §11):
// whether it leads, with which epoch, and its lease's renewals and
// takeovers, read from its elector at scrape time.

package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"dispatch-tui/engine/ha"
)

// AttachHA sets where the leadership metrics are read from (the node's
// elector); without it, as on a single dispatcher, there are none.
func (m *Metrics) AttachHA(stats func() ha.Stats) { m.haStats.Store(&stats) }

// haCollector reads the elector's counts at scrape time.
type haCollector struct {
	stats                                        *atomic.Pointer[func() ha.Stats]
	leader, epoch, renewals, failures, takeovers *prometheus.Desc
}

func newHACollector(m *Metrics) *haCollector {
	return &haCollector{
		stats:     &m.haStats,
		leader:    prometheus.NewDesc(name("leader"), "1 while this node leads (holds the lease and may act by its own clock), else 0.", nil, nil),
		epoch:     prometheus.NewDesc(name("epoch"), "The epoch this node leads with; 0 while it stands by.", nil, nil),
		renewals:  prometheus.NewDesc(name("lease_renewals_total"), "Renewals of this node's lease that succeeded.", nil, nil),
		failures:  prometheus.NewDesc(name("lease_renewal_failures_total"), "Renewals of this node's lease that failed (the database unreachable, or the lease another node's).", nil, nil),
		takeovers: prometheus.NewDesc(name("takeovers_total"), "Leases this node won (each one a term of leadership).", nil, nil),
	}
}

func (c *haCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.leader, c.epoch, c.renewals, c.failures, c.takeovers} {
		ch <- d
	}
}

func (c *haCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.stats.Load()
	if f == nil {
		return
	}
	st := (*f)()
	ch <- prometheus.MustNewConstMetric(c.leader, prometheus.GaugeValue, boolValue(st.Leading))
	ch <- prometheus.MustNewConstMetric(c.epoch, prometheus.GaugeValue, float64(st.Epoch))
	ch <- prometheus.MustNewConstMetric(c.renewals, prometheus.CounterValue, float64(st.Renewals))
	ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(st.RenewalFailures))
	ch <- prometheus.MustNewConstMetric(c.takeovers, prometheus.CounterValue, float64(st.Takeovers))
}
