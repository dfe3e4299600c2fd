# warden — build, test, check, bench, demo.
#
# Two commands set everything up on a fresh machine:
#   make demo   # builds warden, the example policies and the example MCP server, runs the demo
#   make test   # runs every test (with -race)

SHELL     := /bin/bash
GO        ?= go
BIN       := $(CURDIR)/bin
TOOLBIN   := $(CURDIR)/.bin
STATICCHECK_VERSION := v0.8.2
WARDEN    := $(BIN)/warden
EXAMPLE_MCP := $(BIN)/warden-example-mcp
# Every example plugin root, and every first-party one under plugins/, holds its policy's Go
# source; the policy is built to policy.wasm inside the root, where its
# .codex-plugin/plugin.json points.
POLICY_DIRS := $(patsubst %/main.go,%,$(wildcard examples/plugins/*/main.go plugins/*/main.go))
POLICY_WASMS := $(addsuffix /policy.wasm,$(POLICY_DIRS)) $(BIN)/conformance/go.wasm $(BIN)/conformance/c.wasm


.PHONY: all build tools test check bench demo clean policies fuzz soak

all: build

## tools: install what tests need beyond Go (wat2wasm from wabt; clang+lld for the C guest;
## Debian's chromium for the status page's browser test, unless CHROME_PATH names a browser).
tools:
	@missing=""; \
	command -v wat2wasm >/dev/null 2>&1 || missing="$$missing wabt"; \
	command -v clang >/dev/null 2>&1 || missing="$$missing clang"; \
	command -v wasm-ld >/dev/null 2>&1 || missing="$$missing lld"; \
	[ -n "$$CHROME_PATH" ] || command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
	  echo "make tools: installing$$missing with apt-get"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null || \
	  { echo "make tools: could not install$$missing; install them by hand (Debian: apt-get install$$missing)"; exit 1; }; \
	fi

$(TOOLBIN)/staticcheck:
	GOBIN=$(TOOLBIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## build: the warden binary, the example MCP server and every example policy.
build: $(WARDEN) $(EXAMPLE_MCP) policies

$(WARDEN): FORCE
	$(GO) build -o $@ ./cmd/warden

$(EXAMPLE_MCP): FORCE
	@if [ -d examples/mcpserver ]; then $(GO) build -o $@ ./examples/mcpserver; fi

policies: $(POLICY_WASMS)

examples/plugins/%/policy.wasm: FORCE
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $@ ./examples/plugins/$*

plugins/%/policy.wasm: FORCE
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $@ ./plugins/$*

## The ABI conformance guests: the same policy in Go and in freestanding C.
$(BIN)/conformance/go.wasm: FORCE
	@mkdir -p $(dir $@)
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $@ ./examples/conformance/go

$(BIN)/conformance/c.wasm: FORCE | tools
	@mkdir -p $(dir $@)
	examples/conformance/c/build.sh $@

FORCE:

## test: every test, with the race detector. A race-built process sleeps a second at exit
## for reports still being written (GORACE atexit_sleep_ms, default 1000); the tests start
## hundreds of them (helper binaries, the CLI's testscripts), and a race is reported when it
## is found, so the wait buys nothing here.
test: tools
	GORACE=atexit_sleep_ms=0 $(GO) test -race -count=1 ./...

# The files abigen writes from the ABI schema (abi/internal/abigen/schema.go).
ABI_GEN := abi/types_gen.go abi/layout_gen.go abi/flat_gen.go abi/view_gen.go abi/proto_gen.go \
	abi/abitest/schema_gen.go sdk/inline_gen.go examples/conformance/c/wire_gen.h docs/abi.md

## check: formatting, vet, staticcheck, tidy go.mod, the wasip1 build of abi/ and sdk/, and that
## the files generated from the ABI schema are up to date and tracked by git.
check: $(TOOLBIN)/staticcheck
	$(GO) generate ./abi/...
	@untracked=$$(git ls-files --others --exclude-standard -- $(ABI_GEN)); \
	  if [ -n "$$untracked" ]; then echo "generated files not tracked by git (git add them):"; echo "$$untracked"; exit 1; fi; \
	  if ! git diff --exit-code --stat -- $(ABI_GEN); then \
	    echo "generated files are stale: run go generate ./abi/... and commit the result"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go') $$(git ls-files --others --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(TOOLBIN)/staticcheck ./...
	@cp go.mod .go.mod.check; cp go.sum .go.sum.check; \
	  $(GO) mod tidy; \
	  if ! diff -q go.mod .go.mod.check >/dev/null || ! diff -q go.sum .go.sum.check >/dev/null; then \
	    diff -u .go.mod.check go.mod; mv .go.mod.check go.mod; mv .go.sum.check go.sum; \
	    echo "go mod tidy changes go.mod/go.sum: run it and commit"; exit 1; fi; \
	  rm -f .go.mod.check .go.sum.check
	GOOS=wasip1 GOARCH=wasm $(GO) build ./abi/... ./sdk/...

## bench: every benchmark; each reports its ratio against a baseline measured in the same run
## (the x-* metrics), and the summary at the end lists just those.
BENCHTIME ?= 1s
bench: tools
	@mkdir -p $(BIN)
	@set -o pipefail; $(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) ./... 2>&1 | tee $(BIN)/bench.txt
	@echo; echo "== ratios and goals (from bin/bench.txt)"; grep -E 'x-|goal' $(BIN)/bench.txt || true

## fuzz: run every fuzz target for FUZZTIME (default 30s) each.
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	  done; done

## soak: the load test, loopback only: 200 threads x 5 servers, 32 callers through the MCP
## front door for SOAK_DURATION (default 60s); prints p50/p99, throughput, RSS and goroutines
## before, during and after, and fails unless they settle back within 10%. Without -race,
## which would distort the figures; `make test` skips it (it needs WARDEN_SOAK=1).
SOAK_DURATION ?= 60s
soak:
	WARDEN_SOAK=1 SOAK_DURATION=$(SOAK_DURATION) $(GO) test -count=1 -v -run '^TestSoak$$' -timeout 30m ./host/e2e/

## demo: build everything and run the walk-through on the embedded default.
demo: build
	$(WARDEN) demo

clean:
	rm -rf $(BIN)
