package main

import "github.com/dynosim/dynosim-web/core/sim"

// DefaultCPUBudgetMs is the Workers CPU time a run may use when CPU_BUDGET_MS
// is unset: the default limit of the Workers paid plan (30 s per request).
const DefaultCPUBudgetMs = 30_000

// Throughput of the core compiled to wasm, measured on a local workerd (see
// docs/worker.md: ~225,000 engine passes and ~900 Mooncake conversation
// requests per CPU second), with a safety factor of ~2.
// What a run costs grows with its requests' tokens more than with its
// passes (a pass costs O(batch)): each output token is one sequence in one
// pass (~3 M/s natively in big batches, ~2.5× slower in wasm), each prompt
// token is synthesised and hashed once (~140 M/s natively).
const (
	requestsPerCPUSecond     = 500
	passesPerCPUSecond       = 100_000
	outputTokensPerCPUSecond = 500_000
	promptTokensPerCPUSecond = 20_000_000
)

// DefaultMaxStateBytes bounds the simulator state a run may build here
// (sim.Limits.MaxStateBytes, checked before anything is built): a Workers
// isolate has 128 MB of memory for everything (issue 29 item 9), and Go's
// collector lets the heap reach about twice the live state, beside the
// request body (up to 32 MiB) and the workload parsed from it. The
// estimate is rounded up about twice what runs hold, and 48 MiB admits the
// largest run the CPU caps do (15,000 requests at concurrency 15,000,
// about 39 MiB estimated).
const DefaultMaxStateBytes = 48 << 20

// LimitsForBudget derives the per-run caps from a CPU budget in milliseconds,
// so a run that would exceed the budget fails fast with 413 instead of being
// killed by the runtime. A budget ≤ 0 means unlimited.
func LimitsForBudget(ms int) sim.Limits {
	if ms <= 0 {
		return sim.Limits{}
	}
	return sim.Limits{
		MaxRequests: int(int64(ms) * requestsPerCPUSecond / 1000),
		MaxPasses:   int(int64(ms) * passesPerCPUSecond / 1000),

		MaxOutputTokens: int(int64(ms) * outputTokensPerCPUSecond / 1000),
		MaxPromptTokens: int(int64(ms) * promptTokensPerCPUSecond / 1000),
		MaxStateBytes:   DefaultMaxStateBytes,
	}
}
