# DynoSim Web. `make serve` builds and serves the page; `make test` runs every test.
GO      ?= $(shell command -v go || echo /usr/local/go/bin/go)
ADDR    ?= 127.0.0.1:8080
PORT    ?= 8787
export PATH := $(dir $(GO)):$(PATH)

.PHONY: all cli serve wasm test test-go test-race test-wasm test-browser test-worker test-live bench bench-go bench-browser bench-live soak-live pgo fuzz lint worker worker-dev clean

all: cli

GO_SRC := $(shell find . -name '*.go' -not -path './node_modules/*' -not -path './.*')

bin/dynosim: $(GO_SRC) $(wildcard cmd/dynosim/*.jsonl internal/defaultconfig/*.yaml) cmd/dynosim/default.pgo go.mod
	$(GO) build -o bin/dynosim ./cmd/dynosim

cli: bin/dynosim

# `make test` runs every suite, even after one failed (a failure must not
# hide the suites after it), times each, then names the failed ones and
# exits non-zero if any failed. `make test SUITES="lint test-go"` runs some.
# test-browser comes before test-worker and test-live: its `make wasm` links
# bin/dynosim with the page inside, and the two after it use that binary
# (before, test-live linked the CLI and `make wasm` linked it again).
SUITES ?= lint test-go test-wasm test-browser test-worker test-live

test:
	@failed=""; passed=0; nfailed=0; t0=$$(date +%s); \
	for s in $(SUITES); do \
		s0=$$(date +%s); echo "=== make $$s"; \
		if $(MAKE) --no-print-directory $$s; then r=ok; passed=$$((passed + 1)); \
		else r=FAILED; nfailed=$$((nfailed + 1)); failed="$$failed $$s"; fi; \
		echo "=== make $$s: $$r in $$(( $$(date +%s) - s0 )) s (load $$(cut -d' ' -f1-3 /proc/loadavg))"; \
	done; \
	echo "=== make test: $$(( $$(date +%s) - t0 )) s"; \
	if [ -n "$$failed" ]; then echo "=== make test: FAILED:$$failed"; fi; \
	echo "suites: $$passed passed, $$nfailed failed"; \
	[ -z "$$failed" ]

# gofmt, go vet and staticcheck (pinned), natively and for the wasm-only packages.
STATICCHECK := bin/staticcheck
$(STATICCHECK):
	GOBIN=$(CURDIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2

ui/0_components_gen.go: $(wildcard ui/*.vugu)
	$(GO) tool vugugen -s -skip-go-mod ./ui

lint: $(STATICCHECK) ui/0_components_gen.go
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet ./wasm/... ./ui/... ./public/...
	$(STATICCHECK) $$($(GO) list ./... | grep -v -e '/ui$$' -e '/wasm/browser$$')
	GOOS=js GOARCH=wasm $(STATICCHECK) ./wasm/... ./ui/... ./public/...

# Every Go test: most without the race detector, the rest (below) with it.
# Live mode's tests start Debian's Prometheus server (installed here when
# missing, as Chromium is below), and must find it.
PROMETHEUS ?= /usr/bin/prometheus

$(PROMETHEUS):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus; \
	else echo "test-go needs Debian's prometheus at $(PROMETHEUS) (apt-get install prometheus)"; exit 1; fi

# The race detector runs only where non-test code starts goroutines: live
# mode (cmd/dynosim/live/...), the Worker's body reader (wasm/worker),
# concurrent runs of one prepared input (core/sim's Prepared tests) and
# recommend's parallel trials (core/recommend's LedgerIsDeterministic, on 1
# and 2 goroutines). Those tests run only there: the race run checks all
# they check, so running them again without it would spend minutes twice.
# (ui and wasm/browser start goroutines too, but only under js/wasm, which
# has no race detector.) Every step runs even if one before it failed.
RACE_SKIP  := TestPreparedConcurrentRunsEqualPredict|TestLedgerIsDeterministic
PROM_ENV   := env PROMETHEUS=$(PROMETHEUS) DYNOSIM_REQUIRE_PROMETHEUS=1
# KEEP_GOING starts a recipe line whose `run` steps all run; the line then
# fails if any of them failed.
KEEP_GOING := rc=0; run() { echo "$$*"; "$$@" || rc=1; };

# Live mode's race run (the Worker's and live mode's packages) starts first,
# in the background, and runs beside the rest: its tests spend much of their
# time waiting on real servers and clocks (Prometheus scrapes, read
# deadlines, streams at the simulated pace), which the other runs' CPU
# fills; before, it ran last, alone. Its output is kept in RACE_LIVE_LOG
# and printed after the others'. core/sim's and core/recommend's race tests
# run in one go test, side by side: one pattern picks the same tests in
# each as -run Prepared and -run '^TestLedgerIsDeterministic$$' did, one
# package after the other.
RACE_LIVE_LOG := build/out/test-race-live.log
RACE_LIVE  := mkdir -p $(dir $(RACE_LIVE_LOG)); \
	( run $(PROM_ENV) $(GO) test -race -count=1 ./wasm/worker ./cmd/dynosim/live/...; exit $$rc ) > $(RACE_LIVE_LOG) 2>&1 & live=$$!;
RACE_REST  := \
	run $(GO) test -race -count=1 -run 'Prepared|^TestLedgerIsDeterministic$$' ./core/sim ./core/recommend; \
	wait $$live || rc=1; echo "(live mode's race run, beside the above:)"; cat $(RACE_LIVE_LOG);

test-go: $(PROMETHEUS)
	@$(KEEP_GOING) $(RACE_LIVE) \
	run $(PROM_ENV) $(GO) test -count=1 -skip '^($(RACE_SKIP))$$' $$($(GO) list ./... | grep -v /cmd/dynosim/live); \
	$(RACE_REST) exit $$rc

test-race: $(PROMETHEUS)
	@$(KEEP_GOING) $(RACE_LIVE) $(RACE_REST) exit $$rc

# The public traces live in ../shared/traces beside the repository.
TRACES ?= ../shared/traces

# Profile-guided optimisation. cmd/dynosim/default.pgo is a CPU profile of the
# whole-trace benchmarks (core/sim -bench Trace; BenchmarkConversationTraceKernels
# among them, so the kernel tables' hot paths are in it too): go build uses it
# for the CLI by itself, and the simulator's wasm builds (page and Worker) name
# it. It makes the CLI about 7% faster and the wasm 15% (more inlining matters
# more there, where every call spills to Go's in-memory stack). `make pgo`
# refreshes it after core changes.
PGO := -pgo=$(CURDIR)/cmd/dynosim/default.pgo

pgo:
	$(GO) test -run '^$$' -bench Trace -benchtime 2x -o bin/sim.test -cpuprofile cmd/dynosim/default.pgo ./core/sim

# `make bench [BENCH_N=3]`: whole-trace replays of the Mooncake conversation
# trace under the configs in bench/ (headline: 8 round-robin vLLM workers,
# 512-token blocks, polynomial timing, a fixed pool of 16,384 blocks; the
# default timing with 64-token blocks; kv_router; disaggregated; KVBM tiers;
# planner), interleaved, each printed as simulated output tokens per
# CPU-second (user + sys of the process, median of BENCH_N) and its CPU time
# as a multiple of the plain (headline) replay's (bench/bench.sh). `make
# bench-go` runs the Go benchmarks of the hot paths. Neither is part of
# `make test`.
BENCH_N ?= 3

bench: bin/dynosim
	bench/bench.sh bin/dynosim $(TRACES)/mooncake/conversation_trace.jsonl $(BENCH_N)

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./kv/... ./core/... ./internal/...

# `make fuzz [FUZZTIME=30s]` runs every Fuzz target in the module, one after
# another (go test -fuzz takes one target per run), each for FUZZTIME; all
# run even when one finds a failure (its input lands in testdata/fuzz).
# Not part of `make test`: the seed corpora already run there as tests.
FUZZTIME ?= 10s

fuzz:
	@$(KEEP_GOING) \
	for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v node_modules | xargs -n1 dirname | sort -u); do \
		for f in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$dir/*_test.go); do \
			run $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$dir; \
		done; \
	done; exit $$rc

# `make bench-live`: live mode's hot paths, the whole Azure conversation trace
# through a live deployment (compare BenchmarkAzureConvTrace in `make
# bench`, the same work offline; it reads $(TRACES)), a token through the
# Prometheus metrics and a KV-event batch through the hub.
bench-live:
	$(GO) test -run '^$$' -bench 'Live' -benchmem ./core/sim
	$(GO) test -run '^$$' -bench . -benchmem ./cmd/dynosim/live/metrics ./cmd/dynosim/live/kvevents

clean:
	rm -rf bin build/out build/worker public/dynosim.wasm public/ui.wasm public/*.wasm.gz public/wasm_exec.js public/vugu-render.js public/uplot public/kernels ui/0_components_gen.go test-artifacts

# --- Cloudflare Worker (wasm/worker, build/; docs/worker.md) -----------------
# `make worker` builds build/worker/ (glue + app.wasm), `make worker-dev PORT=8787`
# serves it with a local workerd on 127.0.0.1, `make test-worker` runs the
# node:test suite against a real local workerd. wrangler never logs in and
# reaches nothing beyond loopback: credentials are unset, metrics, banner
# update check and the request.cf fetch are off, and every command is --local.
WORKER_OUT     := build/worker
WRANGLER       := node_modules/.bin/wrangler
WORKER_VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
WRANGLER_ENV   := env -u CLOUDFLARE_API_TOKEN -u CLOUDFLARE_API_KEY -u CLOUDFLARE_ACCOUNT_ID \
	-u CLOUDFLARE_EMAIL CLOUDFLARE_CF_FETCH_ENABLED=false WRANGLER_SEND_METRICS=false \
	WRANGLER_SEND_ERROR_REPORTS=false WRANGLER_HIDE_BANNER=true

define BUILD_WORKER
	@test -x $(WRANGLER) || npm ci --no-audit --no-fund
	$(GO) tool workers-assets-gen -mode=go -o $(WORKER_OUT)
	GOOS=js GOARCH=wasm $(GO) build -trimpath $(PGO) -ldflags="-s -w -X main.Version=$(WORKER_VERSION)" -o $(WORKER_OUT)/app.wasm ./wasm/worker
	cp wasm/worker/entry.mjs $(WORKER_OUT)/entry.mjs
	mkdir -p $(WORKER_OUT)/assets/kernels # timing.kernels: aic tables (wasm/worker/kernels_js.go)
	cp timing/kernels/kerneldata/*.json.gz $(WORKER_OUT)/assets/kernels/
endef

# `make worker` always builds (its version stamp may change without a
# source change); the tests build it only when a source changed, so
# test-worker and test-browser share one build.
worker:
	$(BUILD_WORKER)

# (Not ui/: `make wasm` regenerates ui/0_components_gen.go each time, and the
# Worker does not import the page's UI.)
$(WORKER_OUT)/app.wasm: $(filter-out ./ui/%,$(GO_SRC)) wasm/worker/entry.mjs cmd/dynosim/default.pgo go.mod go.sum
	$(BUILD_WORKER)

worker-dev: worker
	$(WRANGLER_ENV) $(WRANGLER) dev -c build/wrangler.jsonc --local --ip 127.0.0.1 --port $(PORT) --persist-to build/out/wrangler-state

# Each test file starts its own workerd on a free port with its own KV
# directory, so files run side by side (WORKER_JOBS): a file keeps about
# one core busy at most, its tests running one at a time, each waiting on
# the CLI or on its workerd. They check the Worker against
# bin/dynosim (DYNOSIM_BIN), the CLI the other suites use, instead of each
# linking a copy of it.
WORKER_JOBS ?= 2

test-worker: $(WORKER_OUT)/app.wasm bin/dynosim
	$(WRANGLER_ENV) DYNOSIM_BIN=bin/dynosim node --test --test-concurrency=$(WORKER_JOBS) wasm/worker/test/*.test.mjs

# --- Web page (wasm/browser, ui/, public/) -----------------------------------
# `make wasm` builds the site into public/ (git-ignored outputs) and rebuilds
# bin/dynosim so `dynosim serve` embeds it; `make serve [ADDR=127.0.0.1:PORT]`
# serves it; `make test-browser` runs the headless-Chromium tests (ui/test);
# `make bench-browser` compares the page with the native CLI. test-browser builds
# the Worker too: ui/test/service.test.mjs runs the page against it.
WASM_BUILD := GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags='-s -w'
CHROMIUM   ?= /usr/bin/chromium

node_modules/uplot/dist/uPlot.iife.min.js node_modules/playwright-core/package.json node_modules/openai/package.json:
	npm ci --no-audit --no-fund

wasm: node_modules/uplot/dist/uPlot.iife.min.js
	$(GO) tool vugugen -s -skip-go-mod ./ui
	$(dir $(GO))gofmt -w ui/0_components_gen.go
	$(WASM_BUILD) $(PGO) -o public/dynosim.wasm ./wasm/browser
	$(WASM_BUILD) -o public/ui.wasm ./ui
	gzip -9 -n -f -k public/dynosim.wasm public/ui.wasm
	cp "$$($(GO) env GOROOT)/lib/wasm/wasm_exec.js" public/wasm_exec.js
	$(GO) run ./internal/vugujs "$$($(GO) list -m -f '{{.Dir}}' github.com/vugu/vugu)/domrender/renderer-js-script.go" > public/vugu-render.js
	mkdir -p public/uplot
	cp node_modules/uplot/dist/uPlot.iife.min.js node_modules/uplot/dist/uPlot.min.css node_modules/uplot/LICENSE public/uplot/
	mkdir -p public/kernels # timing.kernels: aic tables, fetched lazily (wasm/browser/kernels.go)
	cp timing/kernels/kerneldata/*.json.gz timing/kernels/kerneldata/LICENSE timing/kernels/kerneldata/README.md public/kernels/
	$(GO) build -o bin/dynosim ./cmd/dynosim

serve: wasm
	bin/dynosim serve --addr $(ADDR)

$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else echo "test-browser needs Debian's chromium at $(CHROMIUM) (apt-get install chromium)"; exit 1; fi

# The core's tests under wasm. -short skips only the whole-trace engine runs
# (covered natively by test-go): overloaded SGLang page-1 runs keep a backlog
# of thousands of waiting prompts that can pass wasm32's 4 GiB address space.
# Live mode (cmd/dynosim/live, and the Prometheus harness) is native only.
# The slowest packages are named first (WASM_FIRST; go test runs each
# package once, in the order given, two at a time): in name order core/sim,
# alone most of the suite's time (150–165 s of 150–255 s at load 9–17),
# started 82 s in and then ran on one core while the other sat idle.
WASM_FIRST := ./core/sim ./core/recommend ./timing/kernels

test-wasm:
	GOOS=js GOARCH=wasm $(GO) test -short -count=1 -exec="$$($(GO) env GOROOT)/lib/wasm/go_js_wasm_exec" $(WASM_FIRST) ./core/... ./kv/... ./timing/... \
		$$($(GO) list ./internal/... | grep -v /internal/promtest)

# Each test file starts its own server on a free port and its own Chromium
# with a fresh profile directory, so files run side by side (BROWSER_JOBS);
# most of a file's time is waiting on a page, not CPU.
BROWSER_JOBS ?= 2

test-browser: wasm $(WORKER_OUT)/app.wasm node_modules/playwright-core/package.json $(CHROMIUM)
	DYNOSIM_BIN=bin/dynosim CHROMIUM=$(CHROMIUM) node --test --test-concurrency=$(BROWSER_JOBS) ui/test/*.test.mjs

bench-browser: wasm node_modules/playwright-core/package.json $(CHROMIUM)
	DYNOSIM_BIN=bin/dynosim CHROMIUM=$(CHROMIUM) node ui/test/bench.mjs

# --- Live mode (cmd/dynosim/live; docs/live.md) -----------------------------------
# `make test-live` runs the official openai npm client against `dynosim live`
# (streaming chat and text, latency against the offline prediction, 200
# concurrent streams, disconnects, 429s, SIGTERM); `make soak-live` is the
# bounded two-minute soak (memory must stay flat; not part of `make test`).
test-live: bin/dynosim node_modules/openai/package.json
	DYNOSIM_BIN=bin/dynosim node --test --test-concurrency=1 cmd/dynosim/live/test/*.test.mjs

soak-live: bin/dynosim node_modules/openai/package.json
	DYNOSIM_BIN=bin/dynosim node cmd/dynosim/live/test/soak.mjs --minutes 2 --clients 200
