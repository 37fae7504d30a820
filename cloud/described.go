// Described: what a driver last learnt of one instance, and the getters every driver's Instance serves from it.

package cloud

import (
	"fmt"
	"sync"
)

// Description is what a driver last learnt of an instance from its
// provider (a listing, a create's answer, its own tag and destroy calls).
// Extra is the driver's own part (EC2: spot, the state's reason), kept
// under the same lock so that a reader sees one description, never half
// of two.
type Description[X any] struct {
	ProviderType string
	// Address is "host:port" of the instance's SSH server; "" until the
	// provider has given one.
	Address string
	// State is the provider's word for the instance's state as last seen
	// ("" = none given).
	State string
	Tags  Tags
	Extra X
}

// Described holds an instance's id and Description for a driver's
// Instance to embed: it serves ID, ProviderType, Address, State, Tags and
// String (the instance interface's getters) from one lock. Init sets it
// before the instance is shared; Update changes it after.
type Described[X any] struct {
	id InstanceID

	mu   sync.Mutex
	desc Description[X]
}

// Init sets the id and the first description, before the instance is
// shared with anyone.
func (s *Described[X]) Init(id InstanceID, d Description[X]) {
	s.id = id
	s.desc = d
}

// Update changes the description under its lock: fn must not block.
func (s *Described[X]) Update(fn func(d *Description[X])) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.desc)
}

// Snapshot is a copy of the description, its tags cloned.
func (s *Described[X]) Snapshot() Description[X] {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.desc
	d.Tags = d.Tags.Clone()
	return d
}

// ID is the provider's id of the instance.
func (s *Described[X]) ID() InstanceID { return s.id }

// String is "id (provider type @ address)", for logs.
func (s *Described[X]) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%s (%s @ %s)", s.id, s.desc.ProviderType, s.desc.Address)
}

// ProviderType is the provider's name for the instance's type.
func (s *Described[X]) ProviderType() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.desc.ProviderType
}

// Address is "host:port" of the instance's SSH server; "" until the
// provider has given one.
func (s *Described[X]) Address() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.desc.Address
}

// State is the provider's state name as last seen ("" = none given).
func (s *Described[X]) State() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.desc.State
}

// Tags returns a copy of the instance's tags as last seen.
func (s *Described[X]) Tags() Tags {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.desc.Tags.Clone()
}
