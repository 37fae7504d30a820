// The cloud listing: instances added, updated and removed.

package worker

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/view"
)

// syncAtLocked makes the next listing happen no later than t (but not
// sooner than syncSoon after the previous one).
func (p *Pool) syncAtLocked(t time.Time) {
	if earliest := p.lastSyncIssued.Add(p.s.syncSoon); t.Before(earliest) {
		t = earliest
	}
	if t.Before(p.nextSync) {
		p.nextSync = t
	}
}

func (p *Pool) startSyncLocked(now time.Time) {
	p.syncing = true
	p.lastSyncIssued = now
	p.nextSync = now.Add(p.s.syncInterval)
	p.noticeSyncLocked(now)
	seq := p.nextSeqLocked()
	if !p.goLocked(func() {
		// Unfiltered: ownership is judged per instance (ownedLocked), so
		// that other dispatchers' instances can be shown as theirs.
		insts, err := p.is.Instances(p.ctx, nil)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.syncing = false
		if err != nil && p.canceled() {
			return
		}
		p.countOpLocked("list", err)
		if err != nil {
			p.cloudErrLocked(p.clk.Now(), "", "list instances", err)
			if !p.synced {
				p.nextSync = p.clk.Now().Add(p.s.bootProbeInterval)
			}
			return
		}
		p.syncDoneLocked(insts, seq, now)
		p.noteRefusedLocked(p.clk.Now())
		p.othersChangedLocked()
	}) {
		p.syncing = false
	}
}

func (p *Pool) syncDoneLocked(insts []cloud.Instance, seq uint64, issued time.Time) {
	now := p.clk.Now()
	p.syncGen++
	gen := p.syncGen
	for _, inst := range insts {
		id := inst.ID()
		legacy, ours := p.ownedLocked(inst)
		if !ours {
			// Another dispatcher's: never adopted, probed or destroyed. An
			// instance of ours listed under another owner is gone for us
			// (below, as missing from the listing).
			continue
		}
		if w := p.byID[id]; w != nil {
			w.seenGen = gen
			w.inst = inst
			p.priceLocked(w, now)
			p.checkInterruptedLocked(w, now)
			if a := inst.Address(); a != w.v.Address {
				w.v.Address = a
				w.rowChanged()
				p.notifyLocked()
			}
			if w.v.State == StateShutdown && w.destroyed && issued.Sub(w.destroyAt) >= p.s.timeoutShutdown {
				w.destroyed = false
				p.log.Warn("instance still listed after destroy; destroying again", "instance", string(id), "destroyed_at", w.destroyAt)
				p.startDestroyLocked(w, now)
			}
			continue
		}
		if p.ignored[id] {
			continue
		}
		tags := inst.Tags()
		it, ok := p.types[tags[cloud.TagInstanceType]]
		if !ok {
			var name string
			if name, ok = p.byProvider[inst.ProviderType()]; ok {
				it = p.types[name]
			}
		}
		if !ok {
			p.ignored[id] = true
			p.log.Warn("ignoring instance of unknown type", "instance", string(id), "type_tag", tags[cloud.TagInstanceType], "provider_type", inst.ProviderType())
			continue
		}
		b, retag := p.adoptedBehaviorLocked(id, IdleBehavior(tags[cloud.TagIdleBehavior]))
		w := p.addInstanceLocked(inst, it, StateUnknown, "found in the cloud listing", b, now)
		w.tagsDirty = retag
		p.adoptedRetryLocked(tags)
		w.seenGen = gen
		w.initial = !p.synced
		p.priceLocked(w, now)
		p.log.Info("found instance", "instance", string(id), "type", it.Name, "idle_behavior", string(b))
		if legacy {
			p.retagLegacyLocked(w)
		}
	}
	p.pruneForeignLocked(insts)
	// Remove known instances missing from the listing (those added before
	// the listing was issued; newer ones may simply not be listed yet).
	kept := p.list[:0]
	for _, w := range p.list {
		if w.seenGen == gen || w.addedSeq > seq {
			kept = append(kept, w)
			continue
		}
		if err := cloud.LaunchFailed(w.inst); err != nil && w.v.State != StateShutdown {
			p.launchFailedLocked(w, err, now)
		} else if p.vanishedPreemptedLocked(w, now) {
			// An event and the scheduler's requeue say so (preempt.go).
		} else if w.v.State == StateShutdown {
			p.eventLocked(now, w.v.ID, EventState, "gone after shutdown", slog.LevelInfo)
		} else {
			p.eventLocked(now, w.v.ID, EventDisappeared, fmt.Sprintf("instance disappeared from the listing (was %s)", w.v.State), slog.LevelWarn)
		}
		p.removeLocked(w)
		p.notifyLocked()
	}
	clear(p.list[len(kept):])
	p.list = kept
	if p.probeCursor >= len(p.list) {
		p.probeCursor = 0
	}
	if !p.synced {
		p.synced = true
		p.forgetUnlistedBehaviorsLocked()
		p.notifyLocked()
	}
}

// addInstanceLocked adds an instance to the pool (keeping p.list sorted).
func (p *Pool) addInstanceLocked(inst cloud.Instance, it cloud.InstanceType, st State, why string, b IdleBehavior, now time.Time) *instance {
	w := &instance{
		pool:     p,
		inst:     inst,
		itype:    it,
		addedSeq: p.nextSeqLocked(),
		v: InstanceView{
			Instance: view.Instance{
				ID:           inst.ID(),
				Type:         it.Name,
				ProviderType: inst.ProviderType(),
				Address:      inst.Address(),
				Price:        it.Price,
				IdleBehavior: b,
				AppearedAt:   now,
				CreatedAt:    createdAt(inst.Tags()),
			},
		},
		nextProbe: now,
	}
	if w.v.ProviderType == "" {
		w.v.ProviderType = it.ProviderType
	}
	w.setState(st, why)
	w.rowChanged() // a new row (setState marks none when st is unknown)
	p.byID[w.v.ID] = w
	i, _ := slices.BinarySearchFunc(p.list, w.v.ID, func(x *instance, id cloud.InstanceID) int {
		return strings.Compare(string(x.v.ID), string(id))
	})
	p.list = slices.Insert(p.list, i, w)
	if i < p.probeCursor {
		p.probeCursor++
	}
	p.notifyLocked()
	return w
}

// removeLocked drops w from the map (not from p.list: the caller does) and
// closes its executor.
func (p *Pool) removeLocked(w *instance) {
	w.removed = true
	w.rowChanged()
	p.keepBehaviorLocked(w.v.ID, IdleRun)
	p.stopWatchLocked(w)
	delete(p.byID, w.v.ID)
	if e := w.exec; e != nil {
		w.exec = nil
		if !p.goLocked(func() { e.Close() }) {
			go e.Close()
		}
	}
}

// ownedLocked tells whether inst is this dispatcher's (ours), and whether it
// carries the legacy owner tag (to be retagged). A foreign instance is
// kept for display (foreign.go).
func (p *Pool) ownedLocked(inst cloud.Instance) (legacy, ours bool) {
	if p.opts.Owner == "" {
		return false, true
	}
	owner := inst.Tags()[cloud.TagOwner]
	switch {
	case owner == p.opts.Owner:
		delete(p.foreign, inst.ID())
		return false, true
	case p.opts.LegacyOwner != "" && owner == p.opts.LegacyOwner:
		return true, true
	}
	p.noteForeignLocked(inst)
	return false, false
}

// retagLegacyLocked moves an adopted legacy-tagged instance to this
// dispatcher's owner tag, so that the next start (which adopts no legacy
// instances) still knows it as its own.
func (p *Pool) retagLegacyLocked(w *instance) {
	inst := w.inst
	owner := p.opts.Owner
	p.eventLocked(p.clk.Now(), w.v.ID, EventState, "adopted from an older version's owner tag "+p.opts.LegacyOwner+"; retagging with "+owner, slog.LevelInfo)
	p.goLocked(func() {
		tags := inst.Tags().Clone()
		tags[cloud.TagOwner] = owner
		err := p.mayAct()
		if err == nil {
			err = inst.SetTags(p.ctx, tags)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil && p.canceled() {
			return
		}
		p.countOpLocked("set_tags", err)
		if err != nil {
			p.cloudErrLocked(p.clk.Now(), w.v.ID, "retag with owner "+owner, err)
		}
	})
}

// createdAt reads an instance's creation time from its tags (zero when
// the tag is missing or unreadable: an instance of an older version).
func createdAt(tags cloud.Tags) time.Time {
	t, err := time.Parse(time.RFC3339, tags[cloud.TagCreatedAt])
	if err != nil {
		return time.Time{}
	}
	return t
}
