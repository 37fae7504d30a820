// Paging the container list with limit and continue tokens.

package api

import (
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"net/url"

	"dispatch-tui/engine"
)

// ContinueHeader carries the token for the next page of GET /v1/containers
// when more containers remain (kubectl-style limit/continue paging).
const ContinueHeader = "X-Continue-Token"

// pagedList reports whether a container list request pages by continue
// token: it has one, or it has a limit and neither a sort nor an offset.
// Such pages are in submission order, which submits, starts and ends do
// not change, so a walk through them sees every container once.
func pagedList(v url.Values) bool {
	return v.Has("continue") || v.Has("limit") && !v.Has("sort") && !v.Has("offset")
}

// continueToken is the opaque token for a page starting at submission
// sequence next: a version byte, then the sequence.
func continueToken(next uint64) string {
	var b [9]byte
	b[0] = tokenVersion
	binary.BigEndian.PutUint64(b[1:], next)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

const tokenVersion = 1

// parseContinue reads a continue token ("" = the first page).
func parseContinue(s string) (uint64, *httpError) {
	if s == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 9 || b[0] != tokenVersion {
		return 0, badRequest("continue", "continue: not a token this server issued; start again without continue")
	}
	return binary.BigEndian.Uint64(b[1:]), nil
}

// listContainersPaged answers a paged list: the body is the usual list
// (items, items_available), and ContinueHeader is set when more remain.
func (s *server) listContainersPaged(w http.ResponseWriter, v url.Values, opts engine.ListOptions) {
	if v.Has("continue") && (v.Has("sort") || v.Has("offset")) {
		writeError(w, badRequest("continue", "continue: cannot be combined with sort or offset (pages are in submission order)"))
		return
	}
	from, herr := parseContinue(v.Get("continue"))
	if herr != nil {
		writeError(w, herr)
		return
	}
	p := s.eng.ContainersFrom(opts, from)
	if p.More {
		w.Header().Set(ContinueHeader, continueToken(p.Next))
	}
	body := items(s.withCosts(p.Items))
	body.ItemsAvailable = &p.Total
	writeJSON(w, http.StatusOK, body)
}
