// The time since boot in the clock ticks /proc reports start times in (Linux).

package agent

import "golang.org/x/sys/unix"

// bootTick returns the current time since boot in the clock ticks of
// /proc/<pid>/stat's start time (field 22): the kernel takes a process's
// start from CLOCK_BOOTTIME when it forks it and shows it in USER_HZ
// ticks, 100 a second on Linux. Reading the clock before and after a fork
// and finding the same tick gives the child's start without reading
// /proc; startAcross checks the assumption once per process.
func bootTick() (uint64, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, false
	}
	return (uint64(ts.Sec)*1e9 + uint64(ts.Nsec)) / (1e9 / 100), true
}
