# dispatch-tui: see README.md.

GO          ?= go
BIN         := bin/dispatch-tui
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME    ?= 30s

.PHONY: build run test bench bench-scheduler lint fuzz soak

build:
	$(GO) build -o $(BIN) .

# Until the local driver lands, "run" shows the engine scheduling a sample
# workload on the in-memory cloudtest driver.
run: build
	./$(BIN) check-config config.toml.example
	./$(BIN) simulate

test:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./engine/...

# The scheduler-pass benchmark recorded in BENCHMARKS.md.
bench-scheduler:
	$(GO) test -run='^$$' -bench=BenchmarkSchedulerPass -benchmem -count=5 ./engine/scheduler/

lint:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# The chaos soak at full size (a 600-container version runs in make test).
soak:
	$(GO) test -run='^TestChaosSoak$$' -count=1 -v ./engine -soak.containers=2000 -soak.budget=10m

# Each fuzz target, one at a time (go test -fuzz takes one target per run).
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./engine/config
	$(GO) test -run='^$$' -fuzz='^FuzzParseSize$$' -fuzztime=$(FUZZTIME) ./engine/config
	$(GO) test -run='^$$' -fuzz='^FuzzParseArgs$$' -fuzztime=$(FUZZTIME) ./engine/runner
	$(GO) test -run='^$$' -fuzz='^FuzzParseList$$' -fuzztime=$(FUZZTIME) ./engine/runner
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeSpec$$' -fuzztime=$(FUZZTIME) ./engine/api
	$(GO) test -run='^$$' -fuzz='^FuzzListQuery$$' -fuzztime=$(FUZZTIME) ./engine/api
