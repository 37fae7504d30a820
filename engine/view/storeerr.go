// The kinds of store failure the edge shows (GET /v1/summary's
// store_error_kind, the metrics' store_errors_total) and what to do about
// each; engine/store tells an error's kind.

package view

// StoreErrorKind is a kind of store failure.
type StoreErrorKind string

// The kinds, in the order /metrics lists them.
const (
	// StoreUnavailable: the server cannot be reached or went away (down,
	// restarting, a cut network, a call that timed out).
	StoreUnavailable StoreErrorKind = "unavailable"
	// StoreFull: no room to write (the state dir's disk, or the database
	// server's).
	StoreFull StoreErrorKind = "full"
	// StoreAuth: the server refused the credentials.
	StoreAuth StoreErrorKind = "auth"
	// StoreOther: anything else.
	StoreOther StoreErrorKind = "other"
)

// StoreErrorKinds are the kinds, each once.
var StoreErrorKinds = []StoreErrorKind{StoreUnavailable, StoreFull, StoreAuth, StoreOther}

// Advice is what an operator should do about a failure of kind k on a
// store of kind store ("bolt" or "postgres").
func (k StoreErrorKind) Advice(store string) string {
	pg := store == "postgres"
	switch {
	case k == StoreFull && pg:
		return "free space on the PostgreSQL server's disk"
	case k == StoreFull:
		return "free space on the state_dir's disk"
	case k == StoreAuth:
		return "check the user and password in [store] url (or url_file)"
	case pg:
		return "check the PostgreSQL server"
	}
	return "check the state_dir's disk"
}
