#!/bin/bash
# A daemon's CPU on a quiet queue of N containers, its memory limit fixed and following the heap (BENCHMARKS.md).
#
#   tools/daemon-idle.sh BIN DIR N
#
# Starts BIN --daemon on the fake driver with the default memory_limit,
# pauses the queue, submits N containers in batches of 5,000 (the most one request takes), then starts
# the daemon again twice from the same store: once with GOMEMLIMIT=160MiB
# (the default limit held fixed, as before it followed the live heap) and
# once without (memory_limit the floor of a limit that follows it). After
# each start it waits SETTLE seconds (default 40) and prints the daemon's
# user + system CPU over the next 20 s, its RSS and the limit it logged.
#
# FIXED=0 skips the start with the limit fixed. BEFORE=BIN0 adds a start
# of BIN0 (an older build, say) from the same store before BIN's last one,
# so that both are measured in one run on one store. REUSE=1 keeps the
# store DIR holds from an earlier run: no submits, only the restarts.
# PROFILE=1 has every start
# write profiles (--profile) into DIR/profile-1, -2, -3: cpu-1.pprof is
# the 20 s measured.
set -u
BIN=$1 D=$2 N=$3 SETTLE=${SETTLE:-40} FIXED=${FIXED:-1} PROFILE=${PROFILE:-0} BEFORE=${BEFORE:-} REUSE=${REUSE:-0}
. "$(dirname "$0")/daemon-lib.sh"
if [ "$REUSE" = 1 ]; then
	read_config "$D"
else
	rm -rf "$D" && mkdir -p "$D/state"
	write_config "$D"
fi
DPID= STARTS=0
start() { # env assignments for the daemon, if any
	local prof=()
	STARTS=$((STARTS + 1))
	[ "$PROFILE" = 1 ] && prof=(--profile "$D/profile-$STARTS")
	env "$@" "${RUN:-$BIN}" --daemon --config "$D/config.toml" "${prof[@]}" 2>> "$D/daemon.log" &
	DPID=$!
	await_api || exit 1
}

if [ "$REUSE" != 1 ]; then
	start
	curl -sf -m 30 -H "$H" -X POST -H 'Content-Type: application/json' --data '{"reason":"bench: keep the queue waiting"}' "$U/v1/scheduler/pause" > /dev/null || { echo "pause failed" >&2; exit 1; }
	python3 -c 'import json; print(json.dumps([{"command": ["true"], "runtime_constraints": {"vcpus": 1, "ram": 1 << 29}}] * 5000))' > "$D/batch.json"
	for _ in $(seq 1 $((N / 5000))); do
		curl -sf -m 600 -o /dev/null -H "$H" -H 'Content-Type: application/json' --data-binary @"$D/batch.json" "$U/v1/containers" || { echo "submit failed" >&2; exit 1; }
	done
	measure "after the submits, memory_limit following the heap"
	stop
fi
if [ "$FIXED" = 1 ]; then
	start GOMEMLIMIT=160MiB
	measure "restarted, GOMEMLIMIT=160MiB (the limit fixed)"
	stop
fi
if [ -n "$BEFORE" ]; then
	RUN=$BEFORE start
	measure "restarted, BEFORE=$BEFORE"
	stop
fi
start
measure "restarted, memory_limit following the heap"
stop
grep -o '"msg":"memory limit[^}]*' "$D/daemon.log"
