package engine

import (
	"fmt"
	"strings"
	"testing"
)

// Issue 30 item 7: with chunked prefill off, a prompt longer than
// max_batched_tokens used to wait at the head of the queue forever (the
// replay then aborted: "worker 0 cannot make progress"). Now the core
// rejects it as max_batched_tokens, and Config.Fits (live mode's up-front
// 400) says so too: held here to what each core does with the request
// alone, around the budget's edge, submitted and (decode worker) reserved.
func TestItem30_7FitsAgreesWithoutChunkedPrefill(t *testing.T) {
	const budget = 6
	off := func(c Config) Config { c.ChunkedPrefill, c.MaxBatchedTokens = false, budget; return c }
	dec := func(c Config) Config { c.Decode = true; return c }
	pre := func(c Config) Config { c.Prefill = &Handoff{KVBytesPerToken: 1e6}; return c }
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"vllm", off(cfg4(8, 8, 4, false))},
		{"vllm caching", off(cfg4(8, 8, 4, true))},
		{"vllm mtp", off(mtp(cfg4(8, 8, 4, true), 1, 1))},
		{"trtllm", off(trt(8, 8, 4, false))},
		{"vllm prefill worker", pre(off(cfg4(8, 8, 4, true)))},
		{"vllm decode worker", dec(off(cfg4(8, 8, 4, true)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rejected := 0
			for prompt := 1; prompt <= budget+4; prompt++ {
				for _, out := range []int{1, 3} {
					want := tc.cfg.Fits(prompt, out)
					if prompt > budget && want != MaxBatchedTokens {
						t.Fatalf("prompt %d > max_batched_tokens %d: Fits says %v, want max_batched_tokens", prompt, budget, want)
					}
					if want == MaxBatchedTokens {
						rejected++
					}
					c, err := NewRank(tc.cfg)
					if err != nil {
						t.Fatal(err)
					}
					if got := alone(t, c, prompt, out, false); got != want {
						t.Errorf("prompt %d, output %d: the engine says %v, Fits %v", prompt, out, got, want)
					}
					if !tc.cfg.Decode {
						continue
					}
					if c, err = NewRank(tc.cfg); err != nil {
						t.Fatal(err)
					}
					if got, want := alone(t, c, prompt, out, true), tc.cfg.FitsReserved(prompt, out); got != want {
						t.Errorf("reserved: prompt %d, output %d: the engine says %v, Fits %v", prompt, out, got, want)
					}
				}
			}
			if rejected == 0 {
				t.Fatal("no prompt was rejected as max_batched_tokens")
			}
		})
	}
	// With chunked prefill on (or an unbounded budget) the same prompts run.
	for _, c := range []Config{cfg4(8, budget, 4, false), func() Config { c := off(cfg4(8, 8, 4, false)); c.MaxBatchedTokens = 0; return c }()} {
		if why := c.Fits(budget+4, 1); why != NotRejected {
			t.Errorf("chunked %v, budget %d: Fits(%d) = %v, want not rejected", c.ChunkedPrefill, c.MaxBatchedTokens, budget+4, why)
		}
	}
}

// Issue 30 item 7: vLLM's start-up rule (vllm/config/scheduler.py,
// SchedulerConfig._verify_args): without chunked prefill,
// max_num_batched_tokens must be ≥ max_model_len.
func TestItem30_7ChunkedPrefillOffNeedsBudgetOfMaxModelLen(t *testing.T) {
	for _, tc := range []struct {
		chunked     bool
		mbt, mml    int
		wantErrPart string
	}{
		{false, 2048, 4096, "max_batched_tokens: must be ≥ scheduler.max_model_len (4096) with scheduler.chunked_prefill: false, got 2048"},
		{false, 4096, 4096, ""},
		{false, 8192, 4096, ""},
		{false, 0, 4096, ""},   // unbounded budget
		{false, 2048, 0, ""},   // no max_model_len: long prompts are rejected one by one
		{true, 2048, 4096, ""}, // chunked prefill: any budget
	} {
		t.Run(fmt.Sprintf("chunked %v mbt %d mml %d", tc.chunked, tc.mbt, tc.mml), func(t *testing.T) {
			c := cfg4(8, tc.mbt, 4, false)
			c.ChunkedPrefill, c.MaxModelLen = tc.chunked, tc.mml
			err := c.ValidateSettings()
			switch {
			case tc.wantErrPart == "" && err != nil:
				t.Fatalf("err = %v, want none", err)
			case tc.wantErrPart != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErrPart)):
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErrPart)
			}
		})
	}
}
