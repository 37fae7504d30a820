// The store-health metrics: whether the store can write, how many of its
// writes failed (and of which kind) and how long its flushes take (docs/design.md §10.1).

package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"dispatch-tui/engine/queue"
	"dispatch-tui/engine/view"
)

// storeCollector reads the engine's store health at scrape time.
type storeCollector struct {
	m           *Metrics
	unavailable *prometheus.Desc
	failures    *prometheus.Desc
	errors      *prometheus.Desc
	flushes     *prometheus.Desc
}

func newStoreCollector(m *Metrics) *storeCollector {
	return &storeCollector{
		m: m,
		unavailable: prometheus.NewDesc(name("store_unavailable"),
			"1 while the store cannot write containers' records and events (a full disk: the changes are kept in memory and retried with a growing back-off), else 0.", nil, nil),
		failures: prometheus.NewDesc(name("store_write_failures_total"),
			"Writes of containers' records and events to the store that failed (output writes count in logs_store_failures_total).", nil, nil),
		errors: prometheus.NewDesc(name("store_errors_total"),
			"Failed writes of records and events by kind: unavailable (the server cannot be reached or went away), full (no room on the disk or the database server), auth (credentials refused), other.", []string{"kind"}, nil),
		flushes: prometheus.NewDesc(name("store_flush_seconds"),
			"How long the store (the embedded file or PostgreSQL) took to write each flush of records and events (a pass's, a verb's), failed ones included.", nil, nil),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.unavailable
	ch <- c.failures
	ch <- c.errors
	ch <- c.flushes
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	e := c.m.eng.Load()
	if e == nil {
		return
	}
	h := e.StoreHealth()
	ch <- prometheus.MustNewConstMetric(c.unavailable, prometheus.GaugeValue, boolValue(!h.UnavailableSince.IsZero()))
	ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(h.WriteFailures))
	for _, k := range view.StoreErrorKinds {
		ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(h.FailuresByKind[k]), string(k))
	}
	buckets := make(map[float64]uint64, len(queue.FlushBuckets))
	for i, le := range queue.FlushBuckets {
		if i < len(h.Flushes.Counts) {
			buckets[le] = h.Flushes.Counts[i]
		} else {
			buckets[le] = 0
		}
	}
	ch <- prometheus.MustNewConstHistogram(c.flushes, h.Flushes.Count, h.Flushes.Sum, buckets)
}
