# Source Profiler for Linux: prep, profile, plist.
#
#   make demo    build the tools and an example, profile it, print the report
#   make test    everything CI runs (unit, end-to-end, race, vet, lint, format)

GO        ?= go
BIN       := bin
TOOLS     := prep profile plist
STATICCHECK_VERSION := v0.8.2
export CGO_ENABLED := 0

.PHONY: all build test unit race vet lint fmt fmt-check fuzz golden check clean demo bench deps

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -o $(BIN)/ ./cmd/...
	cp prep/profiler.ini $(BIN)/profiler.ini
	cp scripts/fcount scripts/fcover scripts/ftime scripts/lcount scripts/lcover $(BIN)/

# make test is what CI runs: the whole check.
test: check

unit:
	$(GO) test ./...

race:
	CGO_ENABLED=1 $(GO) test -race ./...

vet:
	$(GO) vet ./...

lint:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

fmt:
	gofmt -w .

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

tidy-check:
	$(GO) mod tidy -diff

check: deps fmt-check vet tidy-check lint unit race

# deps installs what the tests need on a fresh Debian machine.
deps:
	@./scripts/install-deps

FUZZTIME ?= 30s
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

golden:
	$(GO) test ./... -run Golden -update

demo: build
	@./scripts/demo

bench:
	@./bench/run

clean:
	rm -rf $(BIN) bench/out
	$(GO) clean -testcache
