// Package cloud defines how the dispatcher talks to a provider of instances
// (VMs or hosts): the InstanceSet and Instance interfaces, the tags the
// dispatcher keeps on instances, and the error kinds that drive the worker
// pool's quota, capacity and rate-limit handling.
package cloud

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// InstanceID is a provider's identifier for an instance.
type InstanceID string

// Tags are key/value labels stored with an instance at the provider. The
// dispatcher uses them to remember an instance's type, idle behaviour and
// secret across its own restarts.
type Tags map[string]string

// Tag keys the dispatcher sets on every instance it creates.
const (
	TagPrefix       = "dispatch-tui-"
	TagInstanceType = TagPrefix + "instance-type"
	TagIdleBehavior = TagPrefix + "idle-behavior"
	TagSecret       = TagPrefix + "secret"
	TagOwner        = TagPrefix + "owner"
	// TagCreatedAt is when the dispatcher created the instance (RFC 3339,
	// UTC): an instance's age survives a restart of the dispatcher.
	TagCreatedAt = TagPrefix + "created-at"
	// TagEpoch is the leader epoch of the dispatcher node that created
	// the instance (docs/design.md §11); absent on a single dispatcher's.
	TagEpoch = TagPrefix + "epoch"
)

// Clone returns a copy of t.
func (t Tags) Clone() Tags {
	c := make(Tags, len(t))
	for k, v := range t {
		c[k] = v
	}
	return c
}

// InstanceType is one configured kind of instance the dispatcher may create.
type InstanceType struct {
	Name         string  `json:"name"`
	ProviderType string  `json:"provider_type"`
	VCPUs        int     `json:"vcpus"`
	RAM          int64   `json:"ram"`
	Scratch      int64   `json:"scratch"`
	GPUs         int     `json:"gpus"`
	Price        float64 `json:"price"`
	Preemptible  bool    `json:"preemptible"`
	// Labels are what containers' scheduling.labels are matched against:
	// a container goes only where each of its labels is present with the
	// same value.
	Labels map[string]string `json:"labels,omitempty"`
}

// Instance is one instance at the provider.
type Instance interface {
	ID() InstanceID
	String() string
	// ProviderType is the provider's name for the instance's type.
	ProviderType() string
	// Address is where the instance's SSH server listens ("host:port").
	Address() string
	// Tags returns the instance's tags as last seen.
	Tags() Tags
	// SetTags replaces the instance's tags.
	SetTags(ctx context.Context, tags Tags) error
	// Destroy asks the provider to shut the instance down.
	Destroy(ctx context.Context) error
}

// ReachDestroyer is implemented by instances whose Destroy has to reach the
// instance itself, because the driver cannot power it off (sshhosts): such
// a Destroy fails while the instance does not answer, and once it gets
// through it ends whatever still runs there. The worker pool therefore does
// not destroy such an instance for failing probes while containers may be
// on it: a destroy could only succeed once the instance answers again, and
// then it would throw away what they did.
type ReachDestroyer interface {
	DestroyNeedsReach() bool
}

// DestroyNeedsReach reports whether inst's Destroy has to reach it (see
// ReachDestroyer).
func DestroyNeedsReach(inst Instance) bool {
	r, ok := inst.(ReachDestroyer)
	return ok && r.DestroyNeedsReach()
}

// Interruptible is implemented by instances the provider may take back
// (spot or preemptible capacity). The pool asks the instances each listing
// returns: one that reports an interruption (announced or under way) has
// its containers requeued at once, without spending their attempts, and is
// destroyed. why is the provider's word for people ("spot capacity
// reclaimed", "Server.SpotInstanceTermination"). An instance of a
// preemptible type that vanishes from the listing is taken as interrupted
// too, whether or not its driver implements this.
type Interruptible interface {
	Interrupted() (why string, ok bool)
}

// Interrupted reports whether inst says it is being taken back by its
// provider (see Interruptible), and why.
func Interrupted(inst Instance) (why string, ok bool) {
	if i, is := inst.(Interruptible); is {
		return i.Interrupted()
	}
	return "", false
}

// LaunchFailer is implemented by instances the provider may end during
// their launch, after the create call succeeded (EC2 does when it finds
// no capacity, or cannot use a volume's key). LaunchFailed is the reason,
// as an error of the kinds above (a CapacityError when the provider had
// no capacity), once the instance is ending or gone for it; nil otherwise.
// The pool takes it as the failure of the create that made the instance,
// with its event and back-off, rather than as an instance that vanished.
type LaunchFailer interface {
	LaunchFailed() error
}

// LaunchFailed is inst's LaunchFailed (see LaunchFailer), or nil.
func LaunchFailed(inst Instance) error {
	if l, ok := inst.(LaunchFailer); ok {
		return l.LaunchFailed()
	}
	return nil
}

// Priced is implemented by instances whose price moves (EC2 spot): the
// pool shows and bills them at CurrentPrice rather than their type's
// configured price.
type Priced interface {
	// CurrentPrice is the instance's price now, in $/h. known is false
	// for an instance whose price does not move (the configured price
	// holds); err says why a moving price is unknown now (the configured
	// price holds meanwhile).
	CurrentPrice() (price float64, known bool, err error)
}

// CurrentPrice is inst's CurrentPrice, or unknown for an instance that
// does not implement Priced.
func CurrentPrice(inst Instance) (price float64, known bool, err error) {
	if p, ok := inst.(Priced); ok {
		return p.CurrentPrice()
	}
	return 0, false, nil
}

// NoticeReader is implemented by instances whose provider posts, on the
// instance itself, a notice a little before it takes the instance back
// (EC2 spot instances: the two-minute interruption notice in the metadata
// service). The pool runs NoticeCommand on the instance with its probes
// ("" = nothing to read: an on-demand instance pays nothing) and gives its
// output to ParseNotice; on a notice it drains the instance at once, and
// when the instance goes its containers are requeued without spending an
// attempt, as for Interruptible.
type NoticeReader interface {
	// NoticeCommand is a shell command that prints the notice, and
	// nothing while there is none.
	NoticeCommand() string
	// ParseNotice reads NoticeCommand's output: ok when a notice is
	// posted, with why (for people) and when the provider will act (zero
	// if it does not say).
	ParseNotice(out []byte) (why string, at time.Time, ok bool)
}

// InstanceSet is a provider's collection of instances.
type InstanceSet interface {
	// Create starts a new instance of the given type with the given tags.
	Create(ctx context.Context, it InstanceType, tags Tags) (Instance, error)
	// Instances lists the provider's instances whose tags include every
	// key/value in filter.
	Instances(ctx context.Context, filter Tags) ([]Instance, error)
	// Stop releases the driver's resources. Instances keep running.
	Stop()
}

// OwnershipRecaller is implemented by drivers that learn an instance is
// the dispatcher's only by reading it from the instance itself (sshhosts
// keeps its claim in a file on the host): after a restart, one that does
// not answer would be missing from the listing, and the containers the
// store says run there would be taken for gone and run again. Before the
// first listing the engine names the instances its store says may hold
// its containers; the driver lists each one as the dispatcher's until it
// can read the instance's own tags (docs/design.md §10.1).
type OwnershipRecaller interface {
	RecallOwned(ids []InstanceID)
}

// RefusedReporter is an InstanceSet that can name the hosts it refuses to
// use (sshhosts: a host key known_hosts does not accept), so that an
// operator sees them although they are not instances.
type RefusedReporter interface {
	// Refused returns the hosts refused by the last contact with each.
	Refused() []RefusedHost
}

// RefusedHost is a host a driver refuses to use, and why.
type RefusedHost struct {
	ID           InstanceID
	Address      string
	InstanceType string // configured type name
	Err          string
}

// QuotaError reports that the provider refused a create because an account
// quota (instances, cores, ...) is exhausted. Scope names the quota: ""
// for one every create counts against, else the key of a quota only some
// types count against (EC2: the vCPUs of an instance family group, on
// demand or spot), which the pool backs off alone: a GPU quota of 0 must
// not stop creates of other types.
type QuotaError struct {
	Scope string
	Err   error
}

func (e *QuotaError) Error() string {
	if e.Scope == "" {
		return fmt.Sprintf("quota exceeded: %v", e.Err)
	}
	return fmt.Sprintf("quota %s exceeded: %v", e.Scope, e.Err)
}
func (e *QuotaError) Unwrap() error { return e.Err }

// QuotaScoper is implemented by InstanceSets whose quotas are per group of
// types: QuotaScope is the Scope of the QuotaError a create of it would
// fail with when its quota is exhausted ("" = the account's). The pool
// counts an instance against the quota of its type's scope.
type QuotaScoper interface {
	QuotaScope(it InstanceType) string
}

// AsQuota returns the QuotaError in err's chain, if any.
func AsQuota(err error) (*QuotaError, bool) {
	var q *QuotaError
	ok := errors.As(err, &q)
	return q, ok
}

// CapacityError reports that the provider has no capacity right now, either
// for one instance type (InstanceType set) or for any type.
type CapacityError struct {
	InstanceType string // provider type; "" means the whole provider
	Err          error
}

func (e *CapacityError) Error() string {
	if e.InstanceType == "" {
		return fmt.Sprintf("provider out of capacity: %v", e.Err)
	}
	return fmt.Sprintf("no capacity for type %s: %v", e.InstanceType, e.Err)
}
func (e *CapacityError) Unwrap() error { return e.Err }

// RateLimitError reports that the provider throttled the caller; no cloud
// call should be made before RetryAfter.
type RateLimitError struct {
	RetryAfter time.Time
	Err        error
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("rate limited until %s: %v", e.RetryAfter.Format(time.RFC3339), e.Err)
}
func (e *RateLimitError) Unwrap() error { return e.Err }

// PermanentError reports that the provider refused a call in a way that
// retrying will not change (missing permissions, a bad image or subnet in
// the configuration): an operator has to act. The pool stops creating for
// a long while instead of retrying at once.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return fmt.Sprintf("refused, needs an operator: %v", e.Err) }
func (e *PermanentError) Unwrap() error { return e.Err }

// IsPermanent reports whether err is (or wraps) a PermanentError.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// IsQuota reports whether err is (or wraps) a QuotaError.
func IsQuota(err error) bool {
	var q *QuotaError
	return errors.As(err, &q)
}

// AsCapacity returns the CapacityError in err's chain, if any.
func AsCapacity(err error) (*CapacityError, bool) {
	var c *CapacityError
	ok := errors.As(err, &c)
	return c, ok
}

// AsRateLimit returns the RateLimitError in err's chain, if any.
func AsRateLimit(err error) (*RateLimitError, bool) {
	var r *RateLimitError
	ok := errors.As(err, &r)
	return r, ok
}

// ErrorKind names err's kind for metrics and events: "quota", "capacity",
// "rate_limit", "permanent", "other", or "" for nil.
func ErrorKind(err error) string {
	switch {
	case err == nil:
		return ""
	case IsQuota(err):
		return "quota"
	}
	if _, ok := AsCapacity(err); ok {
		return "capacity"
	}
	if _, ok := AsRateLimit(err); ok {
		return "rate_limit"
	}
	if IsPermanent(err) {
		return "permanent"
	}
	return "other"
}

// PortableUserName reports whether u is a user name every Unix accepts
// (lower-case letters, digits, '_' and '-', not starting with a digit or
// '-', at most 32 characters): the admin user a driver creates instances
// with, checked by the config and by the driver.
func PortableUserName(u string) bool {
	if u == "" || len(u) > 32 {
		return false
	}
	for i, r := range u {
		switch {
		case r >= 'a' && r <= 'z', r == '_':
		case i > 0 && (r >= '0' && r <= '9' || r == '-'):
		default:
			return false
		}
	}
	return true
}
