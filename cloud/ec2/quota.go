// EC2's quota scopes: vCPU quotas per instance family group and market.

package ec2

// EC2's quota scopes (cloud.QuotaScoper): the vCPU quotas of on-demand
// instances are per instance family group, and spot instances have their
// own per group, so a quota error stops only the types under the same one.

import (
	"strings"

	"dispatch-tui/cloud"
)

// familyGroups maps an instance family's letters (the type name's leading
// letters: "c" of c5.large, "inf" of inf2.xlarge) to its quota group, as
// EC2's service quotas name them: "Running On-Demand Standard (A, C, D,
// H, I, M, R, T, Z) instances", "... G and VT instances", "All P Spot
// Instance Requests" and so on. A family not listed is its own group.
var familyGroups = map[string]string{
	"a": "standard", "c": "standard", "d": "standard", "h": "standard", "i": "standard",
	"im": "standard", "is": "standard", "m": "standard", "r": "standard", "t": "standard", "z": "standard",
	"dl": "dl",
	"f":  "f",
	"g":  "g-vt", "gr": "g-vt", "vt": "g-vt",
	"hpc": "hpc",
	"inf": "inf",
	"p":   "p",
	"trn": "trn",
	"u":   "high-memory",
	"x":   "x",
}

// scopedQuotaCodes are the quota errors of one family group and market;
// the others (InstanceLimitExceeded, InsufficientAddressCapacity) are the
// account's.
var scopedQuotaCodes = codeSet("VcpuLimitExceeded", "MaxSpotInstanceCountExceeded")

// QuotaGroup is the quota group of an EC2 instance type ("standard" for
// c5.large, "p" for p4d.24xlarge).
func QuotaGroup(providerType string) string {
	family, _, _ := strings.Cut(strings.ToLower(providerType), ".")
	letters := family
	if i := strings.IndexFunc(family, func(r rune) bool { return r < 'a' || r > 'z' }); i >= 0 {
		letters = family[:i]
	}
	if g, ok := familyGroups[letters]; ok {
		return g
	}
	return letters
}

// QuotaScope is the scope of the quota an instance of it counts against:
// its family group, on demand or spot ("standard/on-demand", "p/spot").
func (d *Driver) QuotaScope(it cloud.InstanceType) string {
	market := "on-demand"
	if it.Preemptible {
		market = "spot"
	}
	return QuotaGroup(it.ProviderType) + "/" + market
}

var _ cloud.QuotaScoper = (*Driver)(nil)

// scopeQuota puts the scope of it's quota on err, a create's mapped error,
// when EC2's code names a quota of a family group.
func (d *Driver) scopeQuota(err error, code string, it cloud.InstanceType) error {
	if qe, ok := cloud.AsQuota(err); ok && scopedQuotaCodes[code] {
		qe.Scope = d.QuotaScope(it)
	}
	return err
}
