# What the tools/daemon-*.sh measurements share: a daemon's config on the fake driver, its API's address and token, the wait for it to answer.
#
# Sourced, not run. The config is the one enginetest.FleetConfig writes for
# the Go measurements: keep the two alike.

# TOKEN is the API token every measurement's config names.
TOKEN=bench-token
H="Authorization: Bearer $TOKEN"

# write_config DIR [INSTANCES] writes DIR/config.toml: a state dir in
# DIR/state, the API on a random loopback port, the fake driver with one
# type (1 vCPU, 2 GiB). With INSTANCES, room for that many instances,
# created and probed as fast as the in-memory cloud lets; without, the
# driver's defaults. Sets PORT and U.
write_config() {
	local dir=$1 n=${2:-}
	PORT=$((20000 + RANDOM % 20000))
	{
		printf '[dispatcher]\nstate_dir = "%s"\nlisten = "127.0.0.1:%s"\ntoken = "%s"\n' "$dir/state" "$PORT" "$TOKEN"
		[ -n "$n" ] && printf 'max_instances = %s\n' "$n"
		printf '\n[cloud]\ndriver = "fake"\n'
		[ -n "$n" ] && printf 'max_concurrent_creates = 2000\nmax_cloud_ops_per_second = 10000\nmax_probes_per_second = 20000\n'
		printf '\n[[instance_type]]\nname = "small"\nvcpus = 1\nram = "2GiB"\nscratch = "10GiB"\nprice = 0.05\n'
	} > "$dir/config.toml"
	chmod 600 "$dir/config.toml"
	U="http://127.0.0.1:$PORT"
}

# read_config DIR sets PORT and U from the DIR/config.toml an earlier run
# wrote.
read_config() {
	PORT=$(sed -n 's/^listen = "127.0.0.1:\([0-9]*\)"/\1/p' "$1/config.toml")
	U="http://127.0.0.1:$PORT"
}

# await_api waits up to 5 minutes for the daemon's API to answer; false
# if it never does.
await_api() {
	for _ in $(seq 1 600); do
		curl -sf -m 5 -H "$H" "$U/v1/summary" > /dev/null && return 0
		sleep 0.5
	done
	echo "the daemon did not answer at $U" >&2
	return 1
}

# The daemon a measurement started is DPID. stop ends it; cpu is its user
# + system CPU in clock ticks; measure LABEL waits SETTLE seconds, then
# prints its CPU over 20 s, its RSS and the load (with PROFILE=1, its CPU
# profile cut around those 20 s by SIGUSR1).
stop() { kill "$DPID"; wait "$DPID" 2>/dev/null; }
cpu() { awk '{print $14 + $15}' "/proc/$DPID/stat"; } # clock ticks
measure() {
	sleep "$SETTLE"
	local c0 c1
	[ "$PROFILE" = 1 ] && kill -USR1 "$DPID"
	c0=$(cpu); sleep 20; c1=$(cpu)
	[ "$PROFILE" = 1 ] && kill -USR1 "$DPID"
	echo "$1: CPU $(( (c1 - c0) * 1000 / $(getconf CLK_TCK) )) ms over 20 s, RSS $(awk '/VmRSS/ {print $2 / 1024 " MiB"}' "/proc/$DPID/status"), load $(cut -d' ' -f1 /proc/loadavg)"
}
