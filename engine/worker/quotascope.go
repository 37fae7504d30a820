// Quotas per scope: one group of types blocked while the others go on.

package worker

// Quotas of a scope (cloud.QuotaError.Scope): a provider whose quotas are
// per group of types (EC2: the vCPUs of an instance family group, on
// demand or spot) refuses creates of one group while the others go on.
// The pool keeps an estimate per scope as it does for the account's quota
// (create.go): the instances of the scope's types when the provider said
// no, one more tried after quota_probe_after.

import (
	"fmt"
	"time"

	"dispatch-tui/cloud"
)

// scopedQuota is the estimate of one scope's quota: no create of its types
// while they number limit or more, except one above it once probeAt is
// past.
type scopedQuota struct {
	limit   int
	probeAt time.Time
}

// QuotaBlockedError: the quota of Scope, which Type counts against, is
// estimated full (Limit instances of its types); no create of Type is
// tried before Until, when one more is.
type QuotaBlockedError struct {
	Type  string
	Scope string
	Limit int
	Until time.Time
}

func (e *QuotaBlockedError) Error() string {
	return fmt.Sprintf("quota %s reached at %d instances: no %s create tried until %s",
		e.Scope, e.Limit, e.Type, e.Until.Format(time.TimeOnly))
}

// initQuotaScopes learns the scope of every configured type from a driver
// that names them (cloud.QuotaScoper); others are learnt from the errors.
func (p *Pool) initQuotaScopes() {
	p.typeScope = make(map[string]string, len(p.types))
	p.scopeQuota = make(map[string]scopedQuota)
	qs, ok := p.is.(cloud.QuotaScoper)
	if !ok {
		return
	}
	for name, it := range p.types {
		if s := qs.QuotaScope(it); s != "" {
			p.typeScope[name] = s
		}
	}
}

// scopeCountLocked is the number of instances the provider counts against
// scope: the live ones of its types, shutting down or not, and the creates
// in flight.
func (p *Pool) scopeCountLocked(scope string) int {
	n := 0
	for _, w := range p.list {
		if p.typeScope[w.itype.Name] == scope {
			n++
		}
	}
	for _, pc := range p.pending {
		if p.typeScope[pc.view.Type] == scope {
			n++
		}
	}
	return n
}

// scopeBlockedLocked refuses a create of it while its scope's quota is
// estimated full.
func (p *Pool) scopeBlockedLocked(it cloud.InstanceType, now time.Time) error {
	scope := p.typeScope[it.Name]
	q, ok := p.scopeQuota[scope]
	if scope == "" || !ok {
		return nil
	}
	limit := q.limit
	if !now.Before(q.probeAt) {
		limit++
	}
	if p.scopeCountLocked(scope) < limit {
		return nil
	}
	return &QuotaBlockedError{Type: it.Name, Scope: scope, Limit: q.limit, Until: q.probeAt}
}

// scopedQuotaErrLocked records a create of it refused for the quota of
// scope: the estimate becomes what counts against it now.
func (p *Pool) scopedQuotaErrLocked(it cloud.InstanceType, scope string, now time.Time) {
	// The driver's word, for a type the driver did not name (or named
	// differently).
	p.typeScope[it.Name] = scope
	q := scopedQuota{limit: p.scopeCountLocked(scope), probeAt: now.Add(p.s.quotaProbeAfter)}
	p.scopeQuota[scope] = q
	p.log.Warn("quota error: capping the instances of its scope", "scope", scope, "type", it.Name, "limit", q.limit, "probe_at", q.probeAt)
}

// scopedCreatedLocked raises the estimate of it's scope when a create
// above it worked (the probe, or a quota raised meanwhile).
func (p *Pool) scopedCreatedLocked(it cloud.InstanceType, now time.Time) {
	scope := p.typeScope[it.Name]
	q, ok := p.scopeQuota[scope]
	if scope == "" || !ok {
		return
	}
	if n := p.scopeCountLocked(scope); n > q.limit {
		p.scopeQuota[scope] = scopedQuota{limit: n, probeAt: now.Add(p.s.quotaProbeAfter)}
		p.log.Info("quota of a scope above its estimate", "scope", scope, "limit", n)
	}
}
