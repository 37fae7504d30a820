// Instance type labels: parsed, merged with hosts' and bounded for the scheduler's bit sets.

package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// MaxLabelPairs bounds the distinct key=value labels across all instance
// types: the scheduler matches them as one 64-bit set per type, with one
// bit kept for "a label no type has" and one for "not preemptible".
const MaxLabelPairs = 62

// labels converts a labels table (key: its dotted key) to a map of
// strings; nil when empty.
func (p *parser) labels(key string, raw map[string]value) map[string]string {
	if len(raw) == 0 {
		return nil
	}
	out := make(map[string]string, len(raw))
	for _, k := range sortedKeys(raw) {
		var s string
		p.str(joinKey(key, k), raw[k], &s)
		out[k] = s
	}
	return out
}

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

// validateLabels checks instance type labels: keys a selector can spell,
// and few enough distinct pairs for the scheduler's label sets.
func (v *validator) validateLabels(c *Config) {
	pairs := map[string]bool{}
	for i := range c.InstanceTypes {
		it := &c.InstanceTypes[i]
		for _, k := range slices.Sorted(maps.Keys(it.Labels)) {
			if k == "" || strings.ContainsAny(k, "=,") {
				v.add(joinKey(v.keys.of(&it.Labels), k), "a label key must be non-empty, without \"=\" or \",\"")
			}
			pairs[k+"="+it.Labels[k]] = true
		}
	}
	if len(pairs) > MaxLabelPairs {
		v.addAt(&c.InstanceTypes, "instance types have %d distinct labels (key=value pairs), at most %d", len(pairs), MaxLabelPairs)
	}
}
