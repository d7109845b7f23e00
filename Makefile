# kudurru — build, run, test, benchmark.
SHELL      := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
GO         ?= go
BIN        := bin/kudurru
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT     ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS    := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
TEST_TIMEOUT ?= 25m
FUZZTIME   ?= 20s

# Debian packages the tests and benchmarks use, by the command that shows
# they are installed.
TEST_DEPS  := nsd:nsd unbound:unbound dig:bind9-dnsutils kdig:knot-dnsutils ip:iproute2 iptables:iptables
BENCH_DEPS := dnsperf:dnsperf nsd:nsd unbound:unbound kresd:knot-resolver

.PHONY: notice help build run test test-integ fuzz bench bench-auth bench-cache verify fix size deps bench-deps clean

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build the static binary into bin/kudurru
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/kudurru

run: build ## build and start a single dev node (temporary data, loopback only)
	./$(BIN) serve --dev

deps: ## install the Debian packages the tests need, when missing
	@scripts/ensure-deps.sh $(TEST_DEPS)

bench-deps:
	@scripts/ensure-deps.sh $(BENCH_DEPS)

test: deps ## run every test (race detector on)
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

test-integ: deps ## run only the multi-node integration tests
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run 'Integration|Cluster|ThreeNode|ColdStart' ./...

fuzz: ## run every fuzz target for FUZZTIME each
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

bench: ## Go benchmarks (store, lookup, memory, Raft, query path), about 15 min — figures in docs/BENCHMARKS.md
	$(GO) test -run '^$$' -bench 'Lookup1M|Change1M' -benchtime 3s -count 3 ./fsm/zone/
	$(GO) test -run '^$$' -bench MemoryPerRecord -benchtime 1x -count 2 ./fsm/zone/
	$(GO) test -run '^$$' -bench . -benchtime 2000x -count 3 ./cluster/
	$(GO) test -run '^$$' -bench . -benchtime 3s -count 3 ./resolver/...

bench-auth: bench-deps build ## dnsperf: kudurru vs NSD on a 10,000-record zone
	scripts/bench-auth.sh

bench-cache: bench-deps build ## dnsperf: kudurru vs Unbound vs Knot Resolver, cache-hot
	scripts/bench-cache.sh

verify: ## gofmt, vet, module tidiness
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	$(GO) mod tidy -diff

fix: ## format and tidy
	gofmt -w $$(git ls-files '*.go')
	$(GO) mod tidy

notice: ## regenerate NOTICE from the modules linked into the binary
	scripts/notice.sh

size: build ## size of the static binary
	@ls -l $(BIN) | awk '{print $$5, $$9}'

clean:
	rm -rf bin
include jepsen-style-tests/jepsen.mk
