// The host's boot id, to tell containers lost in a reboot.

//go:build unix

package agent

import (
	"bytes"
	"sync"
)

// bootIDPath holds a random id the kernel draws at each boot (Linux).
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// bootID is this boot's id, "" where the system does not tell one. The
// supervisor records it with each command, so that list can tell a host
// that rebooted under its containers (every process of the old boot gone,
// its pids free for new ones) from a supervisor that was killed. Read once
// per process: it cannot change while the process lives.
var bootID = sync.OnceValue(func() string {
	b, err := readSmall(bootIDPath)
	if err != nil {
		return ""
	}
	return parseBootID(b)
})

// parseBootID returns the id in b, the content of bootIDPath, or "" when
// it is not one word of at most 64 bytes (it must fit pid_start's line as
// one field).
func parseBootID(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || len(b) > 64 {
		return ""
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7f {
			return ""
		}
	}
	return string(b)
}
