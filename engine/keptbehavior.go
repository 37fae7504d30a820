// The idle behaviours operators set on instances, kept in the store (a
// part written with the queue's flushes), so that a hold or drain the verb
// answered outlives the process even when the instance's tag was not yet
// written (docs/design.md §10.1).

package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"dispatch-tui/cloud"
	"dispatch-tui/engine/worker"
)

// BehaviorPart is the part of the store the kept behaviours are in.
const BehaviorPart = "instance-settings"

// keptBehaviors is the pool's worker.BehaviorKeeper and the queue's
// queue.Part: the map is its own, under mu; the pool writes it (under the
// pool's lock), the queue's flush takes what changed.
type keptBehaviors struct {
	mu    sync.Mutex
	m     map[cloud.InstanceID]worker.IdleBehavior
	dirty map[cloud.InstanceID]struct{}
}

func newKeptBehaviors() *keptBehaviors {
	return &keptBehaviors{m: map[cloud.InstanceID]worker.IdleBehavior{}, dirty: map[cloud.InstanceID]struct{}{}}
}

// instanceSettings is one instance's stored record: an object, so that
// other settings (a reason) can join it.
type instanceSettings struct {
	IdleBehavior worker.IdleBehavior `json:"idle_behavior"`
}

func (k *keptBehaviors) KeptBehavior(id cloud.InstanceID) (worker.IdleBehavior, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	b, ok := k.m[id]
	return b, ok
}

func (k *keptBehaviors) KeepBehavior(id cloud.InstanceID, b worker.IdleBehavior) {
	k.mu.Lock()
	defer k.mu.Unlock()
	old, had := k.m[id]
	if b == worker.IdleRun {
		if !had {
			return
		}
		delete(k.m, id)
	} else {
		if had && old == b {
			return
		}
		k.m[id] = b
	}
	k.dirty[id] = struct{}{}
}

func (k *keptBehaviors) KeptInstances() []cloud.InstanceID {
	k.mu.Lock()
	defer k.mu.Unlock()
	ids := make([]cloud.InstanceID, 0, len(k.m))
	for id := range k.m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// PartName implements queue.Part.
func (k *keptBehaviors) PartName() string { return BehaviorPart }

// LoadRecord implements queue.Part: at open, before the pool exists.
func (k *keptBehaviors) LoadRecord(key, value []byte) error {
	var s instanceSettings
	if err := json.Unmarshal(value, &s); err != nil || !worker.ValidIdleBehavior(s.IdleBehavior) {
		return fmt.Errorf("the stored settings of instance %s are not valid (%q): %v", key, value, err)
	}
	k.mu.Lock()
	k.m[cloud.InstanceID(key)] = s.IdleBehavior
	k.mu.Unlock()
	return nil
}

// PendingRecords implements queue.Part.
func (k *keptBehaviors) PendingRecords() (keys []string, values [][]byte, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for id := range k.dirty {
		var v []byte
		if b, ok := k.m[id]; ok {
			if v, err = json.Marshal(instanceSettings{IdleBehavior: b}); err != nil {
				return nil, nil, err
			}
		}
		keys, values = append(keys, string(id)), append(values, v)
	}
	clear(k.dirty)
	return keys, values, nil
}

// Unwritten implements queue.Part.
func (k *keptBehaviors) Unwritten(keys []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, key := range keys {
		k.dirty[cloud.InstanceID(key)] = struct{}{}
	}
}
