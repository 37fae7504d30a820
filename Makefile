# dispatch-tui: see README.md.

GO          ?= go
BIN         := bin/dispatch-tui
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME    ?= 30s

.PHONY: build run simulate test bench bench-scheduler bench-e2e bench-tui bench-memory bench-million lint fuzz soak soak-ha

# The binary is built without cgo: static, it runs as the runner on hosts
# (docs/design.md §10). go vet and staticcheck check the tree in that same
# configuration, so that on a cold build cache (CI) the build reuses their
# compiles: with cgo on for them, .ci/run's make build compiled the EC2 SDK
# again, minutes of CPU (BENCHMARKS.md, "Test suite: one compile"). No
# package of ours uses cgo. The tests keep it: -race needs cgo.
NOCGO := CGO_ENABLED=0

build:
	$(NOCGO) $(GO) build -o $(BIN) .

# The console on the embedded default (local driver) with a sample
# workload: q quits and cleans up.
run: build
	./$(BIN) --demo

# The same engine headless, printing progress lines instead of the console.
simulate: build
	./$(BIN) simulate

# make test and make soak run the tests with TMPDIR a fresh directory on
# tmpfs (TEST_TMPFS), removed after. Every test's files go under TMPDIR
# (t.TempDir, state dirs, the PostgreSQL and sshd fixtures, go test's own
# work dir); the tests' stores sync on commit as users' do, with no
# test-only option to skip it, and on tmpfs a sync costs nothing, where on
# a busy disk it made the engine's tests wait 5-10 times their CPU time.
# Mode 1777 as /tmp has: the PostgreSQL fixture runs as nobody. TMPDIR
# names it through a symlink /tmp/dXXX, as short as a path under /tmp can
# be: tests put Unix sockets under t.TempDir(), whose path must fit in
# 107 bytes (a TMPDIR of /dev/shm/dtXXXX made the daemon of
# TestDaemonStopsCleanlyOnSignalsLeavingContainersRunning fail to listen).
TEST_TMPFS ?= $(if $(wildcard /dev/shm/.),/dev/shm,$(or $(TMPDIR),/tmp))
WITH_TEST_TMPDIR = tmp=$$(mktemp -d "$(TEST_TMPFS)/dtXXXX") && chmod 1777 "$$tmp" && \
	link=$$(mktemp -u /tmp/dXXX) && ln -s "$$tmp" "$$link" && \
	trap 'rm -rf "$$tmp" "$$link"' EXIT && TMPDIR=$$link

# -timeout only catches a hang: every test waits on conditions, and a
# loaded machine is slow, not stuck (CI's own limit is 90 minutes).
# go test starts packages' tests in the order named, -p at a time: the
# long ones first, so that none of them starts last and runs alone.
SLOW_TEST_PKGS := ./engine ./engine/launch ./cloud/sshhosts ./engine/store/boltstore ./cloud/ec2 ./engine/store . ./cloud/local ./engine/cloudcheck ./tui/e2e ./engine/api/cli ./engine/scheduler ./engine/runner ./engine/queue ./engine/store/pgstore ./engine/runner/agent
# The packages that run the dispatch-tui binary take the one make build
# links, named by DISPATCH_TUI_TEST_BINARY (engine/enginetest.BinaryEnv),
# instead of each linking their own; go test on a package alone builds it.
# Most of the suite's wall is waiting, not computing: on real processes
# (sshd, daemons, runners, tmux, PostgreSQL), their real-time intervals,
# and on a busy box for a core. go test runs as many packages at once
# (-p), and as many of a package's parallel tests (-parallel), as there
# are CPUs: two here, and the suite used one core on average. TEST_P and
# TEST_PARALLEL overlap more of those waits (BENCHMARKS.md, "Test suite:
# the waits overlapped").
TEST_P        ?= 4
TEST_PARALLEL ?= 8
test: build
	$(NOCGO) $(GO) vet ./...
	$(WITH_TEST_TMPDIR) DISPATCH_TUI_TEST_BINARY=$(CURDIR)/$(BIN) $(GO) test -race -count=1 -timeout=30m -p $(TEST_P) -parallel $(TEST_PARALLEL) $(SLOW_TEST_PKGS) ./...

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./engine/... ./tui/...

# The scheduler-pass benchmark recorded in BENCHMARKS.md.
bench-scheduler:
	$(GO) test -run='^$$' -bench=BenchmarkSchedulerPass -benchmem -count=5 ./engine/scheduler/

# Containers running `true` submitted through the API of the real binary
# running as a daemon, timed to Complete through real SSH on the local
# driver (docs/design.md §9), recorded in BENCHMARKS.md:
# first in batches at the default probe_interval (exits come from the
# runners' notices, docs/design.md §6), then at probe_interval 100ms once
# one container per request and once in batches, each on a fresh daemon,
# with the machine's fork+exec floor (engine/forkfloor) measured before
# and after each run. The last line is the 100ms bulk path's
# "N containers/s, floor F/s, ratio R (…; CPU per container …)".
# BENCH_E2E_STORE=postgres runs each path again beside the embedded one
# with the queue in PostgreSQL (a local server, as the tests start one).
BENCH_E2E_N ?= 20000
BENCH_E2E_ARGS ?=
BENCH_E2E_STORE ?=
bench-e2e:
	@out=$$(mktemp); def=$$(mktemp); \
	$(GO) test -run='^TestDaemonThroughput$$' -count=1 -v -timeout=30m ./engine/launch \
		-throughput.containers=$(BENCH_E2E_N) -throughput.probe=0 -throughput.paths=bulk -throughput.store=$(BENCH_E2E_STORE) -throughput.result=$$def $(BENCH_E2E_ARGS) \
		|| { rm -f $$out $$def; exit 1; }; \
	$(GO) test -run='^TestDaemonThroughput$$' -count=1 -v -timeout=30m ./engine/launch \
		-throughput.containers=$(BENCH_E2E_N) -throughput.store=$(BENCH_E2E_STORE) -throughput.result=$$out $(BENCH_E2E_ARGS) \
		|| { rm -f $$out $$def; exit 1; }; \
	cat $$def $$out; rm -f $$out $$def

lint:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(NOCGO) $(GO) vet ./...
	$(NOCGO) $(GO) run $(STATICCHECK) ./...

# The console benchmarks recorded in BENCHMARKS.md.
bench-tui:
	$(GO) test -run='^$$' -bench='BenchmarkView|BenchmarkKeyToFrame' -benchmem -count=3 ./tui/

# Resident memory with 100,000 containers and 1,000 instances (fake driver).
bench-memory:
	$(GO) test -run='^TestMemory100k$$' -count=1 -v ./engine -memory
	$(GO) test -run='^TestDaemonMemory100k$$' -count=1 -v -timeout=30m ./tui -daemon-memory

# A million containers (docs/design.md §9.1): the scheduler pass at 1M queued and
# 10,000 instances, steady and churning, the first page of the container
# list at 1M, then the engine's resident memory at 1M with 10,000
# instances running (fake driver). About 10 minutes on two cores; recorded in
# BENCHMARKS.md.
bench-million:
	$(GO) test -run='^$$' -bench='BenchmarkSchedulerPass(Churn)?/queued=1000000/' -benchmem -benchtime=5x -count=1 -timeout=20m ./engine/scheduler/
	$(GO) test -run='^$$' -bench='BenchmarkListContainersFirstPage/queued=1000000/' -benchmem -benchtime=20x -count=1 -timeout=20m ./engine/api/
	$(GO) test -run='^TestMemory1M$$' -count=1 -v -timeout=30m ./engine -memory
	$(GO) test -run='^$$' -bench='BenchmarkConsoleKeys/containers=1000000/' -benchmem -benchtime=10x -count=1 -timeout=20m ./tui/
	$(GO) test -run='^$$' -bench='BenchmarkRemoteRefresh/containers=1000000/' -benchmem -benchtime=2x -count=1 -timeout=20m ./tui/backend/

# The chaos soak at full size (2,000 containers; make test runs 500) with
# 16 fault and workload seeds (make test runs one), and once with the queue
# in PostgreSQL, then the kill -9 soak at full size (500; make test 150). Each seed must have
# every container final within -soak.steps simulated seconds; a hang is
# caught by -timeout, never by a wall-clock budget that a loaded machine
# misses.
soak: build
	$(WITH_TEST_TMPDIR) $(GO) test -run='^TestChaosSoak(Postgres)?$$' -count=1 -v -timeout=60m ./engine -soak.containers=2000 -soak.seeds=16
	$(WITH_TEST_TMPDIR) DISPATCH_TUI_TEST_BINARY=$(CURDIR)/$(BIN) $(GO) test -run='^TestCrashRestartSoak$$' -count=1 -v -timeout=15m ./engine/launch -crash.containers=500

# The HA soak (docs/design.md §11): HA_SOAK_FAULTS faults of every kind
# (kill -9, SIGSTOP, SIGTERM of the leader; the leader cut or black-holed
# from PostgreSQL, cut from or delayed to the hosts; a standby killed;
# PostgreSQL restarted) over HA_SOAK_CONTAINERS containers on
# HA_SOAK_NODES daemons of the built binary and HA_SOAK_HOSTS real sshd
# hosts running HA_SOAK_SLOTS containers each, each fault after its share
# of the work, then the checker; it logs the takeover times after kill -9
# and each takeover's phases (BENCHMARKS.md). make test runs its short seed.
# On tmpfs as make test is: the soak measures the dispatchers, not the disk.
HA_SOAK_FAULTS     ?= 200
HA_SOAK_CONTAINERS ?= 5000
HA_SOAK_NODES      ?= 3
HA_SOAK_HOSTS      ?= 4
HA_SOAK_SLOTS      ?= 4
HA_SOAK_SEED       ?= 1
soak-ha: build
	$(WITH_TEST_TMPDIR) DISPATCH_TUI_TEST_BINARY=$(CURDIR)/$(BIN) $(GO) test -run='^TestHASoak$$' -count=1 -v -timeout=90m ./cloud/sshhosts \
		-hasoak.faults=$(HA_SOAK_FAULTS) -hasoak.containers=$(HA_SOAK_CONTAINERS) \
		-hasoak.nodes=$(HA_SOAK_NODES) -hasoak.hosts=$(HA_SOAK_HOSTS) -hasoak.slots=$(HA_SOAK_SLOTS) -hasoak.seed=$(HA_SOAK_SEED)

# Each fuzz target of the repository (every func Fuzz* in a _test.go
# file, found anew each run), one at a time: go test -fuzz takes one
# target per run. Minimizing each new interesting input may take the
# fuzzer a minute by default, with no fuzzing meanwhile: FUZZMIN bounds it.
FUZZMIN     ?= 5s
fuzz:
	@set -e; grep -rHoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' . | sort | \
	while IFS=: read -r file fn; do \
		t=$${fn#func }; d=$$(dirname "$$file"); \
		echo "== $$t ($$d), $(FUZZTIME)"; \
		$(GO) test -run='^$$' -fuzz="^$$t\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMIN) "$$d"; \
	done
