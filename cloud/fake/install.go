// The runner installs' hashes: computed outside the driver's lock, and
// once for a binary its caller sends to every instance.

package fake

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"weak"
)

// installHashes remembers the hash of the last binary installed. A
// dispatcher sends the same copy of its runner (~80 MB, never written) to
// every instance; hashing it again for each of thousands of instances,
// with the driver locked, held every other call of the in-memory cloud
// for minutes while a daemon's instances booted. The copy is known by a
// weak pointer: holding it kept 80 MB of the daemon's heap alive after
// its installs were done (BENCHMARKS.md, helper mem).
type installHashes struct {
	mu   sync.Mutex
	bin  weak.Pointer[byte] // the copy's first byte: equal only to that copy's
	size int
	hash string
}

// of returns the hex SHA-256 of bin, which the caller does not write
// after the call (an Executor's stdin is read only).
func (h *installHashes) of(bin []byte) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(bin) == 0 {
		return hex.EncodeToString(sha256.New().Sum(nil))
	}
	// A weak pointer compares equal only to one made from the same
	// object, even after that object is freed and its memory reused.
	w := weak.Make(&bin[0])
	if w == h.bin && len(bin) == h.size {
		return h.hash
	}
	sum := sha256.Sum256(bin)
	h.bin, h.size, h.hash = w, len(bin), hex.EncodeToString(sum[:])
	return h.hash
}
