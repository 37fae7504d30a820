// Time since boot where it is not known (not Linux).

//go:build unix && !linux

package agent

// bootTick is only known on Linux; elsewhere a start is read from /proc.
func bootTick() (uint64, bool) { return 0, false }
