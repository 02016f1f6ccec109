# DynoSim Web. `make serve` builds and serves the page; `make test` runs every test.
GO      ?= $(shell command -v go || echo /usr/local/go/bin/go)
ADDR    ?= 127.0.0.1:8080
PORT    ?= 8787
export PATH := $(dir $(GO)):$(PATH)

.PHONY: all cli serve test test-go test-wasm test-browser test-worker bench fuzz lint worker worker-dev clean

all: cli

bin/dynosim: $(shell find . -name '*.go' -not -path './node_modules/*') go.mod
	$(GO) build -o bin/dynosim ./cmd/dynosim

cli: bin/dynosim

test: test-go

test-go:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

bench: bin/dynosim
	$(GO) test -run '^$$' -bench . -benchmem ./kv/... ./core/...

clean:
	rm -rf bin build/out public/dynosim.wasm public/wasm_exec.js
