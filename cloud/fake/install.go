// The runner installs' hashes: computed outside the driver's lock, and
// once for a binary its caller sends to every instance.

package fake

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// installHashes remembers the hash of the last binary installed. A
// dispatcher sends the same copy of its runner (~80 MB, never written) to
// every instance; hashing it again for each of thousands of instances,
// with the driver locked, held every other call of the in-memory cloud
// for minutes while a daemon's instances booted.
type installHashes struct {
	mu   sync.Mutex
	bin  []byte // kept: its memory cannot be reused for another binary
	hash string
}

// of returns the hex SHA-256 of bin, which the caller does not write
// after the call (an Executor's stdin is read only).
func (h *installHashes) of(bin []byte) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(bin) > 0 && len(bin) == len(h.bin) && &bin[0] == &h.bin[0] {
		return h.hash
	}
	sum := sha256.Sum256(bin)
	h.bin, h.hash = bin, hex.EncodeToString(sum[:])
	return h.hash
}
