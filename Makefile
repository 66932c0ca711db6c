# Clientele. `make run` serves on an embedded PostgreSQL; `make test` runs
# every test (it starts its own PostgreSQL); `make bench` runs the long
# benchmarks.
GO        ?= go
BIN       := bin/clientele
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.7.0
PKGS      := ./...

.PHONY: build run test lint bench clean

build:
	$(GO) build -o $(BIN) ./cmd/clientele

run: build
	./$(BIN) serve --demo --log-format text

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)

test: lint
	$(GO) test -race -count=1 -timeout 9m $(PKGS)

# Every Go benchmark once (each sizes its own work), then the load driver:
# a real `serve` fed through the HTTP API.
bench: build
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m $(PKGS)
	$(GO) run ./cmd/clientele-load -entity customers -n 1000000
	$(GO) run ./cmd/clientele-load -entity events -n 1000000
	$(GO) run ./cmd/clientele-load -entity sales -n 1000000

clean:
	rm -rf bin
