#!/bin/bash
# A daemon's CPU on a quiet queue at quota: N/100 instances busy, N more queued (BENCHMARKS.md).
#
#   tools/daemon-quota.sh BIN DIR N
#
# Starts BIN --daemon on the fake driver with max_instances = N/100, submits
# N/100 run-forever containers and waits for them to run, then N containers
# that wait at quota (batches of 5,000). After SETTLE seconds (default 40) it
# prints the daemon's user + system CPU over the next 20 s; with PROFILE=1 the
# daemon writes profiles (--profile) into DIR/profile, cpu-1.pprof being the
# 20 s measured. BEFORE=BIN0 then restarts BIN0 from the same store and
# measures it the same way, then BIN again, so both are in one run. Beware:
# the fake driver's cloud lives in the daemon, so a restarted daemon finds
# no instance, creates N/100 again and starts their containers again; at
# 300,000 that was not over SETTLE=30 s after the restart (3.2 s of CPU over
# the 20 s, starts and boot probes in the profile). For an A/B of the quiet
# state, run the script once for each binary without BEFORE, at once.
# CONSOLES=K (default 0) then attaches K idle consoles to each daemon
# measured (the same binary --connect'ed, each in a tmux session of its own),
# waits until each shows every container in its header, and measures the
# daemon again (PROFILE=1: that window is cpu-3.pprof).
set -u
BIN=$1 D=$2 N=$3 SETTLE=${SETTLE:-40} PROFILE=${PROFILE:-0} BEFORE=${BEFORE:-} CONSOLES=${CONSOLES:-0}
. "$(dirname "$0")/daemon-lib.sh"
rm -rf "$D" && mkdir -p "$D/state"
INST=$((N / 100))
write_config "$D" "$INST"
DPID= STARTS=0 DBIN=
TMUX_SOCK="$D/tmux.sock"
tm() { tmux -u -f /dev/null -S "$TMUX_SOCK" "$@"; }
trap 'tm kill-server 2> /dev/null; [ -n "$DPID" ] && kill "$DPID" 2> /dev/null' EXIT
# consoles LABEL attaches CONSOLES consoles of DBIN, measures, and detaches them.
consoles() {
	[ "$CONSOLES" -gt 0 ] || return 0
	local i total=$((N + INST))
	for i in $(seq 1 "$CONSOLES"); do
		tm new-session -d -s "c$i" -x 140 -y 40 "$DBIN" --connect "$U" --token "$TOKEN" --config "$D/config.toml"
	done
	for i in $(seq 1 "$CONSOLES"); do
		for _ in $(seq 1 600); do
			tm capture-pane -p -t "c$i" | grep -q "containers $total" && break
			sleep 1
		done
	done
	measure "$1, $CONSOLES consoles attached"
	tm kill-server
}
start() { # the binary to start
	local prof=()
	STARTS=$((STARTS + 1))
	[ "$PROFILE" = 1 ] && prof=(--profile "$D/profile-$STARTS")
	"$1" --daemon --config "$D/config.toml" "${prof[@]}" 2>> "$D/daemon.log" &
	DPID=$! DBIN=$1
	await_api || exit 1
}
summary() { curl -sf -m 60 -H "$H" "$U/v1/summary"; }
submit() { # count command
	python3 -c 'import json, sys; print(json.dumps([{"command": [sys.argv[2]], "runtime_constraints": {"vcpus": 1, "ram": 1 << 29}}] * int(sys.argv[1])))' "$1" "$2" > "$D/batch.json"
	curl -sf -m 600 -o /dev/null -H "$H" -H 'Content-Type: application/json' --data-binary @"$D/batch.json" "$U/v1/containers" || { echo "submit failed" >&2; exit 1; }
}

start "$BIN"
for _ in $(seq 1 $((INST / 1000))); do submit 1000 run-forever; done
[ $((INST % 1000)) -gt 0 ] && submit $((INST % 1000)) run-forever
for _ in $(seq 1 600); do
	summary | python3 -c 'import json, sys; s = json.load(sys.stdin); sys.exit(0 if s.get("containers", {}).get("Running", 0) >= '"$INST"' else 1)' 2> /dev/null && break
	sleep 2
done
for _ in $(seq 1 $((N / 5000))); do submit 5000 true; done
measure "at quota, $N queued, $INST instances"
consoles "at quota"
if [ -n "$BEFORE" ]; then
	stop
	start "$BEFORE"
	measure "restarted, BEFORE=$BEFORE"
	consoles "restarted, BEFORE=$BEFORE"
	stop
	start "$BIN"
	measure "restarted, $BIN"
	consoles "restarted, $BIN"
fi
stop
