package replay

import (
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/timing"
)

// Options configure one replay.
type Options struct {
	Load        Load
	MaxRequests int         // stop releasing after this many (0: all)
	MaxTime     timing.Time // soft cap on the virtual clock (0: none)
	MaxPasses   int         // error past this many engine passes (0: none)
	Seed        uint64      // arrival stream (Poisson gaps)
	// Progress hears every 256th loop step (the first included): the
	// virtual time and the finished and total requests; false cancels.
	Progress func(simMs float64, done, total int) bool
	Capture  bool
	Watch    uint64 // a request whose timeline the report records (0: none); engines get it in engine.Config.Watch
	SLA      report.SLA
	Warmup   report.Warmup // requests the report leaves out (traffic.warmup)

	// MaxPromptTokens and MaxOutputTokens cap the work of a run: the prompt
	// and requested output tokens of the requests it releases (0: none).
	// What a pass costs grows with its batch, so a cap on passes alone lets
	// a few thousand passes over huge batches run for minutes. When every
	// request of the workload runs they are checked before the replay, else
	// as the requests are released.
	MaxPromptTokens, MaxOutputTokens int

	// Transfer makes the replay disaggregated: pools are prefill then
	// decode (disagg.go). Nil: one aggregated pool.
	Transfer *Transfer

	// AsyncScheduling: each worker plans its next pass while the current
	// one runs (vLLM's async scheduling, SGLang's and TRT-LLM's overlap
	// schedulers), so a request that reaches a busy worker joins the pass
	// after next; an idle worker takes it at once.
	AsyncScheduling bool

	// Frontend is the serving frontend's latency (HTTP, tokenization,
	// hand-off to the engine): a request reaches the router this long
	// after it arrives. It counts in TTFT and E2E, not in the router's
	// queue time.
	Frontend timing.Time
	// Tiers: some pool has KVBM lower tiers (the TTFT breakdown gets its
	// onboarding part).
	Tiers bool

	// Scaling puts a planner in the loop (scale.go); nil: static pools.
	Scaling *Scaling

	// Live: requests come from Submit and the loop runs until its driver
	// stops (live.go).
	Live bool
	// Observer hears the loop's facts (observe.go), after the report
	// collector and the planner: a live driver, a test.
	Observer Observer
}
