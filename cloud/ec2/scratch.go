// The scratch volume: attached at launch, formatted and mounted by user-data.

package ec2

// The scratch volume's part of user-data: an instance type's scratch is an
// EBS volume attached at launch, which user-data finds, formats and mounts
// at ScratchDir before anything else (docs/design.md §8).

import "strconv"

// ScratchDir is where user-data mounts the scratch volume, owned by the
// admin user.
const ScratchDir = "/scratch"

// ScratchLabel is the scratch filesystem's label (ext4 allows 16
// characters): fstab mounts it by this after a reboot.
const ScratchLabel = "dispatch-scratch"

// User-data variables of the scratch volume, set only when the instance
// type has scratch.
const (
	UserDataVarScratchDevice = "DISPATCH_TUI_SCRATCH_DEVICE"
	UserDataVarScratchBytes  = "DISPATCH_TUI_SCRATCH_BYTES"
	UserDataVarScratchDir    = "DISPATCH_TUI_SCRATCH_DIR"
)

// Scratch is the scratch volume user-data sets up: the device name it was
// attached as and its size; Bytes 0 = none.
type Scratch struct {
	Device string
	Bytes  int64
}

// scratchVars are the scratch variables' lines of user-data.
func scratchVars(s Scratch) string {
	return UserDataVarScratchDevice + "='" + s.Device + "'\n" +
		UserDataVarScratchBytes + "='" + strconv.FormatInt(s.Bytes, 10) + "'\n" +
		UserDataVarScratchDir + "='" + ScratchDir + "'\n"
}

// ScratchScript finds the scratch volume, formats it (ext4) unless it
// already holds a filesystem, and mounts it at $DISPATCH_TUI_SCRATCH_DIR,
// owned by $DISPATCH_TUI_USER; it expects the variables above and runs
// under "set -eu". The volume is the attached device name where that
// exists (Xen instances, or a udev rule naming NVMe volumes so); on Nitro
// instances it is an NVMe disk whose model is EBS's, of exactly the
// requested size, without partitions, filesystem or mount (the root disk
// has partitions or is mounted). It waits up to a minute for the disk to
// appear. Any failure stops the script before the dispatcher's key is
// authorized, so the instance fails its boot rather than run containers
// without the scratch space they were promised; the reason is in the
// cloud-init log (the instance's console output). $DISPATCH_TUI_ROOT
// (default "") prefixes the paths it reads and writes (/sys, /dev,
// /proc/mounts, /etc/fstab and the mount point) and
// $DISPATCH_TUI_SCRATCH_WAIT (default 60) is how many seconds it waits,
// so that a test can run it against a fake tree.
const ScratchScript = `r=${DISPATCH_TUI_ROOT:-}
scratch_find() {
	if [ -b "$DISPATCH_TUI_SCRATCH_DEVICE" ]; then
		printf '%s\n' "$DISPATCH_TUI_SCRATCH_DEVICE"
		return 0
	fi
	want=$((DISPATCH_TUI_SCRATCH_BYTES / 512))
	for d in "$r"/sys/block/nvme*n*; do
		[ -e "$d/size" ] || continue
		n=${d##*/}
		case $(cat "$d/device/model" 2>/dev/null || true) in
		"Amazon Elastic Block Store"*) ;;
		*) continue ;;
		esac
		[ "$(cat "$d/size")" = "$want" ] || continue
		for p in "$d/$n"p*; do
			[ -e "$p" ] && continue 2
		done
		grep -q "^/dev/$n " "$r/proc/mounts" && continue
		blkid "$r/dev/$n" >/dev/null 2>&1 && continue
		printf '%s\n' "$r/dev/$n"
		return 0
	done
	return 1
}
tries=0
until scratch=$(scratch_find); do
	tries=$((tries + 1))
	if [ "$tries" -ge "${DISPATCH_TUI_SCRATCH_WAIT:-60}" ]; then
		echo "dispatch-tui: no scratch volume of $DISPATCH_TUI_SCRATCH_BYTES bytes (attached as $DISPATCH_TUI_SCRATCH_DEVICE) after $tries s" >&2
		exit 1
	fi
	sleep 1
done
if ! blkid "$scratch" >/dev/null 2>&1; then
	mkfs.ext4 -q -E nodiscard -L ` + ScratchLabel + ` "$scratch"
fi
mkdir -p "$r$DISPATCH_TUI_SCRATCH_DIR"
mount "$scratch" "$r$DISPATCH_TUI_SCRATCH_DIR"
if ! grep -q "^LABEL=` + ScratchLabel + ` " "$r/etc/fstab" 2>/dev/null; then
	printf 'LABEL=` + ScratchLabel + ` %s ext4 defaults,nofail 0 2\n' "$DISPATCH_TUI_SCRATCH_DIR" >>"$r/etc/fstab"
fi
chown "$DISPATCH_TUI_USER:$(id -gn "$DISPATCH_TUI_USER")" "$r$DISPATCH_TUI_SCRATCH_DIR"
`
