#!/bin/bash
# A daemon on the fake driver brought to N running instances, its API timed all along (BENCHMARKS.md).
#
#   tools/daemon-instances.sh BIN DIR N [WATCHERS]
#
# Starts BIN --daemon (GOTRACEBACK=all, its log in DIR/daemon.log), submits N
# run-forever containers of 1 vCPU in batches of 1,000, and times GET /v1/summary
# every 2 s into DIR/lat.log with the load average and the instance counts. WATCHERS
# clients follow the instances as an attached console does (changed_since, wait=30s).
# A summary that takes over 30 s is a stall: the daemon gets SIGQUIT, and its
# goroutine dump lands in DIR/daemon.log. The daemon is left running for more
# measurements; stop it with: kill $(cat DIR/pid).
set -u
BIN=$1 D=$2 N=$3 WATCH=${4:-0}
rm -rf "$D" && mkdir -p "$D/state"
. "$(dirname "$0")/daemon-lib.sh"
write_config "$D" "$N"
GOTRACEBACK=all "$BIN" --daemon --config "$D/config.toml" 2> "$D/daemon.log" &
DPID=$!
echo $DPID > "$D/pid"
await_api || exit 1

python3 -c 'import json; print(json.dumps([{"command": ["run-forever"], "runtime_constraints": {"vcpus": 1, "ram": 1 << 29}}] * 1000))' > "$D/batch.json"
(for b in $(seq 1 $((N / 1000))); do
	curl -s -m 600 -o /dev/null -w "submit $b %{http_code} %{time_total}s\n" -H "$H" \
		-H 'Content-Type: application/json' --data-binary @"$D/batch.json" "$U/v1/containers" >> "$D/lat.log"
done) &

# A watcher reads every instance once, then waits for changes from its generation.
watch() {
	python3 - "$U" "$DPID" "$TOKEN" <<'PY'
import json, os, sys, urllib.request
url, pid, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
gen = 0
while True:
    try:
        os.kill(pid, 0)
    except OSError:
        break
    q = f"{url}/v1/instances?changed_since={gen}&limit=10000" + ("&wait=30s" if gen else "")
    req = urllib.request.Request(q, headers={"Authorization": "Bearer " + token})
    try:
        gen = json.load(urllib.request.urlopen(req, timeout=90))["generation"]
    except Exception:
        gen = 0  # a 410 or an error: read everything again
PY
}
for _ in $(seq 1 "$WATCH"); do watch & done

start=$(date +%s)
while kill -0 $DPID 2> /dev/null; do
	s=$(date +%s.%N)
	out=$(curl -s -m 30 -H "$H" "$U/v1/summary")
	rc=$?
	el=$(echo "$(date +%s.%N) - $s" | bc)
	inst=$(echo "$out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["instances"])' 2> /dev/null)
	echo "$(date -u +%T) t=$(($(date +%s) - start))s summary rc=$rc ${el}s load=$(cut -d' ' -f1 /proc/loadavg) $inst" >> "$D/lat.log"
	if [ $rc -eq 28 ]; then
		echo "stall: a summary took over 30 s; SIGQUIT, dump in $D/daemon.log" >> "$D/lat.log"
		kill -QUIT $DPID
		break
	fi
	sleep 2
done
