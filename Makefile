# Clientele. `make run` serves on an embedded PostgreSQL; `make test` runs
# every test (it starts its own PostgreSQL); `make bench` runs the long
# benchmarks; `make chaos` runs several nodes under faults at random.
GO        ?= go
BIN       := bin/clientele
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.7.0
# The import-graph check of the layering (.go-arch-lint.yml).
ARCHLINT    := github.com/fe3dback/go-arch-lint@v1.13.0
PKGS      := ./...

.PHONY: build run test lint openapi-lint bench fuzz chaos clean

build:
	$(GO) build -o $(BIN) ./cmd/clientele

# ARGS are passed on to serve: make run ARGS='--webhook-allow-cidrs 127.0.0.0/8'
run: build
	./$(BIN) serve --demo --log-format text --sftp-addr 127.0.0.1:2222 $(ARGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	$(GO) run $(ARCHLINT) check --output-color=false

# Every test with the race detector, then the end-to-end tests of the
# binary (cmd/clientele) without it. Those drive serve, import and export
# as the built program, most as processes (three nodes on NATS,
# PostgreSQL crashed and failed over, SFTP killed mid-file): under the
# race detector they took 384 s, scaled down, against 140 s at full size
# without. The code they drive is the race-tested code of every other
# package; `go test -race ./cmd/clientele/` passes too.
#
# go test runs packages two at a time in the order given: the slowest go
# first, so that none starts last. Within a package, the tests that call
# t.Parallel run four at a time: they wait on projections, browsers and
# servers more than they compute.
#
# cmd/clientele-chaos runs with them, without the race detector too: its
# TestChaosRun is a 90 s run of `make chaos` (three nodes, three NATS
# servers, a PostgreSQL primary and standby, faults of every kind) on the
# binary it builds, checked against what the clients were told.
#
# TEST_FLAGS: lint has run the whole of go vet, so go test does not run
# its subset again (-vet=off); and the test binaries are linked without
# DWARF (-ldflags=-w), which nothing here reads: linking the sixty-odd
# race-instrumented test binaries took 177 s of CPU, 110 s without it
# (stack traces and race reports come from the symbol table, kept).
SLOW_PKGS := systemtest console delivery commands/imports sftp projections internal/bus
END_TO_END_PKGS := ./cmd/clientele/ ./cmd/clientele-chaos/
TEST_FLAGS := -count=1 -vet=off -ldflags=-w
test: lint
	$(GO) test -race $(TEST_FLAGS) -parallel 4 -timeout 9m $(addprefix ./,$(SLOW_PKGS)) \
	  $$($(GO) list $(PKGS) | grep -v -x -e '.*/cmd/clientele' -e '.*/cmd/clientele-chaos' $(foreach p,$(SLOW_PKGS),-e '.*/$(p)'))
	$(GO) test $(TEST_FLAGS) -timeout 8m $(END_TO_END_PKGS)

# The OpenAPI document through the JavaScript world's two linters:
# Redocly's (its recommended rules, less the trailing slashes the interface
# requires) and swagger-parser's validation, pinned by the lock file in
# tools/openapi-lint. Not part of make test, which validates the document
# and every answer in Go (docs/openapi_test.go, systemtest): it installs
# about 200 MB from the npm registry.
openapi-lint:
	cd tools/openapi-lint && npm ci --no-audit --no-fund --loglevel=error
	cd tools/openapi-lint && npx redocly lint ../../docs/openapi.yaml --config redocly.yaml --format summary
	cd tools/openapi-lint && node validate.mjs ../../docs/openapi.yaml

# Every Go benchmark once (each sizes its own work), then the load driver:
# a real `serve` fed through the HTTP API, and a CSV file of
# SFTP_CSV_BYTES pushed through its SFTP drop directory, then over HTTP.
SFTP_CSV_BYTES ?= 1000000000
bench: build
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m $(PKGS)
	$(GO) run ./cmd/clientele-load -entity customers -n 1000000
	$(GO) run ./cmd/clientele-load -entity events -n 1000000
	$(GO) run ./cmd/clientele-load -entity sales -n 1000000
	$(GO) run ./cmd/clientele-load -sftp -csv-bytes $(SFTP_CSV_BYTES)
	$(GO) run ./cmd/clientele-load -bus nats -entity customers -n 1000000
	$(GO) run ./cmd/clientele-load -entity campaigns -n 5000000 -customers 1000000 -sale-rows 1000000 -campaigns 100
	$(GO) run ./cmd/clientele-load -entity segments -n 1000000

# Every fuzz target for FUZZTIME each (go test -fuzz takes one target per
# run), with FUZZPARALLEL workers; a failure is kept by Go under the
# package's testdata/fuzz/<target>/ and listed at the end. Minimizing a
# new interesting input may take Go's default of 60s, the whole run:
# FUZZMINIMIZETIME bounds it. See docs/fuzzing.md.
FUZZTIME         ?= 30s
FUZZPARALLEL     ?= 1
FUZZMINIMIZETIME ?= 5s
FUZZ_TARGETS := \
	./domain/values:FuzzDateTime ./domain/values:FuzzCodes ./domain/values:FuzzCompanyField \
	./domain/values:FuzzDecodeRecord ./domain/customer:FuzzParse ./domain/customer:FuzzPhone \
	./domain/product:FuzzParse ./domain/product:FuzzMoney ./domain/shop:FuzzParse \
	./domain/activity:FuzzParse ./domain/sale:FuzzParse ./domain/sale:FuzzAmounts \
	./domain/dataquery:FuzzParse ./domain/access:FuzzScopes ./domain/datatarget:FuzzTemplate \
	./domain/datatarget:FuzzOutlet ./internal/ingest:FuzzJSONRecords ./internal/ingest:FuzzCSVRecords \
	./internal/ingest:FuzzCSVTable ./internal/ingest:FuzzCSVAgreesWithJSON ./api:FuzzAppendDoc \
	./console:FuzzIndentBounded ./readmodels:FuzzPreviewInSQL

fuzz:
	@failed=; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; echo "== $$pkg $$name"; \
	  $(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) \
	    -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel $(FUZZPARALLEL) $$pkg || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "failed:$$failed"; exit 1; fi

# Faults at random on three serve nodes (NATS JetStream, PostgreSQL with a
# synchronous standby), checked from the clients' history; see
# docs/operations.md, "Faults at random: make chaos". CHAOS_SEED repeats a
# run's schedule; a failing run keeps its folder (it names it).
CHAOS_DURATION ?= 10m
CHAOS_SEED     ?=
chaos: build
	CHAOS_DURATION=$(CHAOS_DURATION) CHAOS_SEED=$(CHAOS_SEED) $(GO) run ./cmd/clientele-chaos -bin $(BIN)

clean:
	rm -rf bin
