// Instance type labels: their checks, and the labels of sshhosts hosts
// added to their types.

package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"dispatch-tui/cloud"
)

// MaxLabelPairs bounds the distinct key=value labels across all instance
// types: the scheduler matches them as one 64-bit set per type, with one
// bit kept for "a label no type has" and one for "not preemptible".
const MaxLabelPairs = 62

// mergeHostLabels adds the labels of [[cloud.sshhosts.host]] entries to
// their instance type. The scheduler places containers by type, so every
// host of one type must carry the same labels; hosts that differ need
// types of their own.
func (p *parser) mergeHostLabels(c *Config) {
	first := map[string]int{} // type name → first host of it
	for i, h := range c.Cloud.SSHHosts.Hosts {
		key := fmt.Sprintf("cloud.sshhosts.host[%d].labels", i)
		j, seen := first[h.InstanceType]
		if !seen {
			first[h.InstanceType] = i
			for t := range c.InstanceTypes {
				it := &c.InstanceTypes[t]
				if it.Name != h.InstanceType || len(h.Labels) == 0 {
					continue
				}
				merged := maps.Clone(it.Labels)
				if merged == nil {
					merged = map[string]string{}
				}
				for k, v := range h.Labels {
					if tv, ok := it.Labels[k]; ok && tv != v {
						p.fail(joinKey(key, k), "is %q, but instance type %q has %s = %q: drop one, or give this host its own [[instance_type]]", v, it.Name, k, tv)
						continue
					}
					merged[k] = v
				}
				it.Labels = merged
			}
			continue
		}
		if !maps.Equal(h.Labels, c.Cloud.SSHHosts.Hosts[j].Labels) {
			p.fail(key, "hosts of instance type %q must all have the same labels (this one has %s, cloud.sshhosts.host[%d] has %s): give differently labelled hosts their own [[instance_type]]",
				h.InstanceType, FormatLabels(h.Labels), j, FormatLabels(c.Cloud.SSHHosts.Hosts[j].Labels))
		}
	}
}

// FormatLabels renders labels as "k=v k2=v2", sorted by key; "none" when
// empty.
func FormatLabels(m map[string]string) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, " ")
}

// labelKeys: keys a selector can spell.
func labelKeys(v map[string]string, s *site) {
	for _, k := range sortedKeys(v) {
		if k == "" || strings.ContainsAny(k, "=,") {
			s.badEntry(k, "a label key must be non-empty, without \"=\" or \",\"")
		}
	}
}

// fewLabels: few enough distinct pairs for the scheduler's label sets.
func fewLabels(v []cloud.InstanceType, s *site) {
	pairs := map[string]bool{}
	for _, it := range v {
		for k, val := range it.Labels {
			pairs[k+"="+val] = true
		}
	}
	if len(pairs) > MaxLabelPairs {
		s.bad("instance types have %d distinct labels (key=value pairs), at most %d", len(pairs), MaxLabelPairs)
	}
}
