// Creating instances within quotas and limits.

package worker

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/view"
)

type pendingCreate struct {
	view InstanceView
}

// Create asks the cloud for a new instance of the named type. nil means the
// create was accepted and runs asynchronously (a pending entry shows in
// Instances until it completes).
func (p *Pool) Create(typeName string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	it, now, err := p.refusalLocked(typeName)
	if err != nil {
		return err
	}
	if !p.cloudBucket.take(now) {
		return ErrThrottled
	}
	tags := p.takeRetryTagsLocked(it.Name, now)
	if tags == nil {
		var secret [16]byte
		rand.Read(secret[:])
		tags = cloud.Tags{
			cloud.TagOwner:        p.opts.Owner,
			cloud.TagInstanceType: it.Name,
			cloud.TagIdleBehavior: string(IdleRun),
			cloud.TagSecret:       hex.EncodeToString(secret[:]),
			cloud.TagCreatedAt:    now.UTC().Format(time.RFC3339),
		}
		if p.s.epoch > 0 {
			tags[cloud.TagEpoch] = strconv.FormatInt(p.s.epoch, 10)
		}
	}
	pc := &pendingCreate{view: InstanceView{
		Instance: view.Instance{
			Type:         it.Name,
			ProviderType: it.ProviderType,
			Price:        it.Price,
			State:        StateBooting,
			IdleBehavior: IdleRun,
			AppearedAt:   now,
			CreatedAt:    now,
		},
	}}
	p.pending = append(p.pending, pc)
	p.creatingChangedLocked()
	p.stats.Creating = len(p.pending)
	p.notifyLocked()
	p.goLocked(func() {
		var inst cloud.Instance
		err := p.mayAct()
		if err == nil {
			inst, err = p.is.Create(p.ctx, it, tags)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.createDoneLocked(pc, it, tags, inst, err)
	})
	return nil
}

// CreateRefusal is the error Create would return now, without creating
// anything: nil if it would create (scheduler.Pool). Every refusal is a
// function of the pool's state and the time, so a scheduler that asks it
// again need not run a pass at quota to learn the same answer.
func (p *Pool) CreateRefusal(typeName string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _, err := p.refusalLocked(typeName)
	return err
}

// refusalLocked is Create's answer before it takes a cloud-op token:
// the type, the time it was asked at, and why no instance of it may be
// created now (nil: one may, if a token is left). It changes nothing
// (p.mu held).
func (p *Pool) refusalLocked(typeName string) (cloud.InstanceType, time.Time, error) {
	if p.stopped {
		return cloud.InstanceType{}, time.Time{}, errStopped
	}
	it, ok := p.types[typeName]
	if !ok {
		return it, time.Time{}, fmt.Errorf("unknown instance type %q", typeName)
	}
	now := p.clk.Now()
	if now.Before(p.pausedUntil) {
		return it, now, ErrThrottled
	}
	if now.Before(p.refusedUntil) {
		return it, now, &CreateRefusedError{Until: p.refusedUntil, Err: p.refusedErr}
	}
	if now.Before(p.capBlockedAll) {
		return it, now, &CapacityBlockedError{Type: "", Until: p.capBlockedAll}
	}
	if until, ok := p.capBlocked[it.ProviderType]; ok && now.Before(until) {
		return it, now, &CapacityBlockedError{Type: typeName, Until: until}
	}
	if err := p.bootFailingLocked(typeName, now); err != nil {
		return it, now, err
	}
	if p.atCapLocked(now) {
		return it, now, ErrAtQuota
	}
	if err := p.scopeBlockedLocked(it, now); err != nil {
		return it, now, err
	}
	if p.s.maxConcurrentCreates > 0 && len(p.pending) >= p.s.maxConcurrentCreates {
		return it, now, ErrThrottled
	}
	if !p.cloudBucket.has(now) {
		return it, now, ErrThrottled
	}
	return it, now, nil
}

func (p *Pool) createDoneLocked(pc *pendingCreate, it cloud.InstanceType, tags cloud.Tags, inst cloud.Instance, err error) {
	if i := slices.Index(p.pending, pc); i >= 0 {
		p.pending = slices.Delete(p.pending, i, i+1)
		p.creatingChangedLocked()
	}
	p.stats.Creating = len(p.pending)
	p.notifyLocked()
	if err != nil && p.canceled() {
		return
	}
	now := p.clk.Now()
	p.countOpLocked("create", err)
	if err != nil {
		p.keepRetryTagsLocked(it.Name, tags, err, now)
		if qe, ok := cloud.AsQuota(err); ok && qe.Scope != "" {
			p.scopedQuotaErrLocked(it, qe.Scope, now)
		} else if ok {
			// What the provider counts: instances still shutting down
			// hold their quota until they are gone.
			p.quotaEst = p.providerCountLocked()
			p.quotaProbeAt = now.Add(p.s.quotaProbeAfter)
			p.log.Warn("quota error: capping instances", "limit", p.quotaEst, "probe_at", p.quotaProbeAt)
		} else if cloud.IsPermanent(err) {
			// Retrying soon would fail the same way: wait for an
			// operator (or a long while) instead of hot-looping.
			p.refusedUntil = now.Add(permanentBackoff)
			p.refusedErr = err.Error()
			p.log.Error("cloud refused a create; not creating for a while", "until", p.refusedUntil, "err", err)
		} else if ce, ok := cloud.AsCapacity(err); ok {
			until := now.Add(p.s.capacityBackoff)
			if ce.InstanceType == "" {
				p.capBlockedAll = until
			} else {
				p.capBlocked[ce.InstanceType] = until
			}
		}
		p.cloudErrLocked(now, "", "create "+it.Name, err)
		return
	}
	id := inst.ID()
	w := p.byID[id]
	if w != nil {
		// Already found by a listing that raced with the create.
		if w.v.State == StateUnknown {
			w.setState(StateBooting, "created by this dispatcher (a listing found it first)")
		}
	} else {
		w = p.addInstanceLocked(inst, it, StateBooting, "created by this dispatcher", IdleRun, now)
	}
	w.v.AskedAt = pc.view.AppearedAt
	w.viewChanged()
	if w.v.CreatedAt.IsZero() {
		w.v.CreatedAt = pc.view.CreatedAt
		w.rowChanged()
	}
	p.scopedCreatedLocked(it, now)
	if p.quotaEst >= 0 {
		if n := p.providerCountLocked(); n > p.quotaEst {
			// The probe above the estimate worked: raise it, and probe
			// again later.
			p.quotaEst = n
			p.quotaProbeAt = now.Add(p.s.quotaProbeAfter)
			if p.s.maxInstances > 0 && n >= p.s.maxInstances {
				p.quotaEst = -1
			}
		}
	}
	p.eventLocked(now, id, EventCreate, fmt.Sprintf("created %s instance (%s)", it.Name, it.ProviderType), slog.LevelInfo)
	p.syncAtLocked(now)
}

// countLocked is the number of instances counting against max_instances:
// every live one the provider has not accepted a destroy for (an instance
// shutting down still runs, and costs, until then), plus creates in
// flight. It is counted, not kept: a destroy can end after a listing
// dropped its instance, and a running count got that wrong. A pass asks a
// few times at most.
func (p *Pool) countLocked() int {
	n := len(p.pending)
	for _, w := range p.list {
		if !w.destroyed {
			n++
		}
	}
	return n
}

// providerCountLocked is the number of instances the provider counts
// against its quota: every live one, shutting down or not, plus creates in
// flight.
func (p *Pool) providerCountLocked() int {
	return len(p.list) + len(p.pending)
}

// quotaLimitLocked is the quota estimate, plus one once the quota probe is
// due; math.MaxInt without an estimate.
func (p *Pool) quotaLimitLocked(now time.Time) int {
	if p.quotaEst < 0 {
		return math.MaxInt
	}
	if !now.Before(p.quotaProbeAt) {
		return p.quotaEst + 1
	}
	return p.quotaEst
}

// limitLocked is the effective instance cap: min(max_instances, quota
// limit).
func (p *Pool) limitLocked(now time.Time) int {
	limit := p.quotaLimitLocked(now)
	if p.s.maxInstances > 0 {
		limit = min(limit, p.s.maxInstances)
	}
	return limit
}

// atCapLocked reports whether no instance may be created now: max_instances
// counts the instances not yet destroyed, the quota estimate those the
// provider still lists.
func (p *Pool) atCapLocked(now time.Time) bool {
	if p.s.maxInstances > 0 && p.countLocked() >= p.s.maxInstances {
		return true
	}
	return p.providerCountLocked() >= p.quotaLimitLocked(now)
}

// Quota returns the effective instance cap (math.MaxInt when unlimited) and
// whether the pool is at it.
func (p *Pool) Quota() (limit int, atQuota bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clk.Now()
	return p.limitLocked(now), p.atCapLocked(now)
}
