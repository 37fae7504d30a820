#!/bin/bash
# A daemon's RSS alone, with attached consoles' reads, and during 1 % kills a second (BENCHMARKS.md).
#
#   tools/daemon-consoles.sh BIN DIR [CONSOLES]
#
# DIR is one tools/daemon-idle.sh made (its config and store of N paused
# containers). Starts BIN --daemon on it and, after SETTLE seconds
# (default 40), prints its RSS; then starts CONSOLES (default 2) readers
# that do what an attached console does to the daemon — the first read,
# GET /v1/containers?changed_since=0 in pages of 10,000, then a watch
# (changed_since=GEN&wait=30s) reading every change — and prints the RSS
# (and its anonymous and file-backed parts)
# once all have read everything; then kills 10,000 Queued containers a
# second for KILLS seconds (default 60; one bulk request each) with the
# readers following, and prints the RSS every 10 s, its peak (VmHWM) and
# the daemon's CPU over the first read and over the kills.
# PROFILE=1 writes profiles (--profile) into DIR/profile-consoles, a heap
# profile at each RSS printed.
set -u
BIN=$1 D=$2 CONSOLES=${3:-2} SETTLE=${SETTLE:-40} KILLS=${KILLS:-60} PROFILE=${PROFILE:-0}
. "$(dirname "$0")/daemon-lib.sh"
read_config "$D"
prof=()
[ "$PROFILE" = 1 ] && prof=(--profile "$D/profile-consoles")
"$BIN" --daemon --config "$D/config.toml" "${prof[@]}" 2>> "$D/daemon-consoles.log" &
DPID=$!
READERS=()
cleanup() { for p in "${READERS[@]}"; do kill "$p" 2>/dev/null; done; kill "$DPID" 2>/dev/null; wait 2>/dev/null; }
trap cleanup EXIT
await_api || exit 1
rss() {
	[ "$PROFILE" = 1 ] && kill -USR1 "$DPID"
	echo "$1: RSS $(awk '/VmRSS|RssAnon|RssFile/ {printf "%s %.0f MiB ", $1, $2 / 1024}' "/proc/$DPID/status")peak $(awk '/VmHWM/ {printf "%.0f MiB", $2 / 1024}' "/proc/$DPID/status"), load $(cut -d' ' -f1 /proc/loadavg)"
}
sleep "$SETTLE"
rss "alone, after ${SETTLE}s"
rm -f "$D"/reader-*.done
# A reader keeps no copy: the daemon's cost is the same. The generation and
# "more" close each body (api.ChangesBody), so its tail is all it parses.
reader() { # done-file
	local gen=0 n=0 body tail
	body=$(mktemp "$D/reader.XXXXXX")
	while :; do # the first read
		curl -sf -m 300 -o "$body" -H "$H" "$U/v1/containers?changed_since=$gen&limit=10000" || { sleep 1; continue; }
		tail=$(tail -c 300 "$body")
		gen=$(grep -o '"generation":[0-9]*' <<< "$tail" | cut -d: -f2)
		n=$((n + $(grep -o '"id":"c-' "$body" | wc -l)))
		grep -q '"more":true' <<< "$tail" || break
	done
	echo "$n" > "$1"
	while :; do # the watch: every change, read as a console reads them
		curl -sf -m 90 -o "$body" -H "$H" "$U/v1/containers?changed_since=$gen&limit=10000&wait=30s" || { sleep 1; continue; }
		gen=$(tail -c 300 "$body" | grep -o '"generation":[0-9]*' | cut -d: -f2)
	done
}
for i in $(seq 1 "$CONSOLES"); do
	reader "$D/reader-$i.done" &
	READERS+=($!)
done
cpu() { awk '{print $14 + $15}' "/proc/$DPID/stat"; } # clock ticks
ms() { echo $(( ($2 - $1) * 1000 / $(getconf CLK_TCK) )); }
c0=$(cpu) t0=$(date +%s)
until [ "$(ls "$D"/reader-*.done 2>/dev/null | wc -l)" -ge "$CONSOLES" ]; do sleep 1; done
rss "$CONSOLES consoles after their first read ($(( $(date +%s) - t0 ))s, CPU $(ms "$c0" "$(cpu)") ms; $(cat "$D"/reader-1.done | tr -d '\n') containers each)"
c0=$(cpu) t0=$(date +%s)
for s in $(seq 1 "$KILLS"); do
	curl -sf -m 60 -o /dev/null -H "$H" -H 'Content-Type: application/json' \
		--data '{"verb":"kill","selector":{"state":["Queued"]},"limit":10000,"reason":"bench: 1 % a second"}' "$U/v1/containers/bulk" || echo "kill $s failed" >&2
	[ $((s % 10)) = 0 ] && rss "$CONSOLES consoles, $((s * 10000)) killed"
	sleep 1
done
rss "$CONSOLES consoles, kills over ($(( $(date +%s) - t0 ))s, CPU $(ms "$c0" "$(cpu)") ms)"
