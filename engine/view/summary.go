// The engine's summary (the console's header, GET /v1/summary) and its
// per-type counts (GET /v1/types), as the edge shows them.

package view

import "time"

// Summary is the header line of the console and GET /v1/summary: counts,
// cost, quota and the paused flag.
type Summary struct {
	Driver       string                `json:"driver"`
	Instances    map[InstanceState]int `json:"instances"`
	Containers   map[State]int         `json:"containers"`
	PricePerHour float64               `json:"price_per_hour"`
	QuotaLimit   int                   `json:"quota_limit"`
	AtQuota      bool                  `json:"at_quota"`
	Paused       bool                  `json:"paused"`
	LongestWait  time.Duration         `json:"longest_wait"`
	LastPass     time.Duration         `json:"last_pass"`
	Behaviors    map[IdleBehavior]int  `json:"idle_behaviors"`
	// ContainersGen changes whenever any container's record or pending
	// reason does: a client's copy of the list is current while it stays.
	ContainersGen uint64 `json:"containers_gen"`
	// StoreUnavailableSince is when the store began failing to write
	// (omitted while it writes); StoreError is why.
	StoreUnavailableSince time.Time `json:"store_unavailable_since,omitzero"`
	StoreError            string    `json:"store_error,omitempty"`
	// StoreErrorKind is StoreError's kind: unavailable, full, auth or
	// other (engine/store's one classification).
	StoreErrorKind StoreErrorKind `json:"store_error_kind,omitempty"`
	// Store is the store in use: "bolt" (the embedded file) or
	// "postgres" ([store] url).
	Store string `json:"store"`
}

// StoreName is the store in use as ls names it.
func (s Summary) StoreName() string {
	if s.Store == "postgres" {
		return "PostgreSQL"
	}
	return "embedded (state_dir)"
}

// StoreStatus is the line ls and the console show while the store cannot
// write, "" while it can. The time is local, as the console's clock is.
func (s Summary) StoreStatus() string {
	if s.StoreUnavailableSince.IsZero() {
		return ""
	}
	check := s.StoreErrorKind.Advice(s.Store)
	return "store unavailable since " + s.StoreUnavailableSince.Local().Format(time.TimeOnly) + ": " + s.StoreError +
		" (changes are kept in memory until it can write; " + check + ")"
}

// TypeSummary is a configured instance type with how many instances of it
// there are, by state. Its JSON is the type's own fields (as in the
// config) followed by the counts.
type TypeSummary struct {
	Name         string  `json:"name"`
	ProviderType string  `json:"provider_type"`
	VCPUs        int     `json:"vcpus"`
	RAM          int64   `json:"ram"` // bytes
	Scratch      int64   `json:"scratch"`
	GPUs         int     `json:"gpus"`
	Price        float64 `json:"price"` // per hour
	Preemptible  bool    `json:"preemptible"`
	// Labels are what containers' scheduling.constraints are matched
	// against.
	Labels map[string]string `json:"labels,omitempty"`

	Count   int                   `json:"count"`
	ByState map[InstanceState]int `json:"by_state"`
}
