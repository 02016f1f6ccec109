package engine

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// Issue 33 item 5: TensorRT-LLM's batch waiting holds a context request
// back while generation requests run, for up to batch_wait_timeout_iters
// passes, unless the pass's tokens reach batch_wait_max_tokens_ratio ×
// max_num_tokens; 0 / 0 (and either alone, as in TensorRT-LLM) is today's
// scheduling.
func TestItem33_5BatchWait(t *testing.T) {
	for _, tc := range []struct {
		name      string
		wait      BatchWait
		decoding  bool // a request is decoding when the new one arrives
		prompt    int  // the new request's prompt (budget 100)
		wantDelay int  // passes between its submission and its admission pass
	}{
		{"off: admitted at once", BatchWait{}, true, 8, 0},
		{"wait 5, ratio 1: held 5 passes", BatchWait{TimeoutIters: 5, MaxTokensRatio: 1}, true, 8, 5},
		{"wait 20, ratio 0.9: held 20 passes", BatchWait{TimeoutIters: 20, MaxTokensRatio: 0.9}, true, 8, 20},
		{"ratio releases early: 89 + 1 tokens ≥ 0.9 × 100", BatchWait{TimeoutIters: 20, MaxTokensRatio: 0.9}, true, 89, 0},
		{"just under the ratio: 88 + 1 < 90, held", BatchWait{TimeoutIters: 3, MaxTokensRatio: 0.9}, true, 88, 3},
		{"no decode running: never waits", BatchWait{TimeoutIters: 20, MaxTokensRatio: 0.9}, false, 8, 0},
		{"timeout alone does nothing (TensorRT-LLM: tokens ≥ 0)", BatchWait{TimeoutIters: 20}, true, 8, 0},
		{"ratio alone does nothing (TensorRT-LLM: count ≥ 0)", BatchWait{MaxTokensRatio: 0.9}, true, 8, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Policy: TRTLLM, BlockSize: 4, NumBlocks: 4096, MaxBatchedTokens: 100, ChunkedPrefill: true,
				Model: timing.Fixed{Prefill: 10, Decode: 1}, BatchWait: tc.wait}
			c := mustCore(t, cfg)
			var now timing.Time
			step := func() *Pass {
				p := c.Step(now)
				now = p.End
				return p
			}
			if tc.decoding {
				submitN(t, c, 1, 8, 200)
				step() // prefill
				step() // decoding
			}
			// Two rounds: the count restarts after a release.
			for round, id := range []uint64{2, 3} {
				submitN(t, c, id, tc.prompt, 2)
				delay := -1
				for i := 0; i < 60 && delay < 0; i++ {
					if slices.ContainsFunc(step().Admissions, func(a Admission) bool { return a.ID == id }) {
						delay = i
					}
				}
				if delay != tc.wantDelay {
					t.Fatalf("round %d: admitted %d passes after submission, want %d", round, delay, tc.wantDelay)
				}
				for range 4 { // let it finish
					step()
				}
			}
		})
	}
}

// A context request part-way through a chunked prompt is held too, and
// the settings are refused, naming the key, where they mean nothing.
func TestItem33_5BatchWaitChunkAndErrors(t *testing.T) {
	cfg := Config{Policy: TRTLLM, BlockSize: 4, NumBlocks: 4096, MaxBatchedTokens: 100, ChunkedPrefill: true,
		Model: timing.Fixed{Prefill: 10, Decode: 1}, BatchWait: BatchWait{TimeoutIters: 2, MaxTokensRatio: 0.9}}
	c := mustCore(t, cfg)
	var now timing.Time
	submitN(t, c, 1, 8, 200)
	for range 2 {
		now = c.Step(now).End
	}
	// A 150-token prompt: its first chunk fills the budget (99 tokens and
	// the decode's 1 ≥ 0.9 × 100) and runs at once; the rest, 51 + 1 < 90,
	// is a context request held for 2 passes.
	submitN(t, c, 2, 150, 2)
	var prompt []int
	for range 5 {
		p := c.Step(now)
		now = p.End
		prompt = append(prompt, p.FPM.PrefillTokens)
	}
	if want := []int{99, 0, 0, 51, 0}; !slices.Equal(prompt, want) {
		t.Fatalf("prompt tokens per pass %v, want %v", prompt, want)
	}

	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"vllm", func(c *Config) { c.Policy = VLLM }, "batch_wait_timeout_iters: TensorRT-LLM's batch waiting, backend trtllm only (not vllm)"},
		{"sglang ratio only", func(c *Config) { c.Policy, c.BlockSize, c.BatchWait.TimeoutIters = SGLang, 1, 0 }, "batch_wait_max_tokens_ratio: TensorRT-LLM's batch waiting, backend trtllm only (not sglang)"},
		{"negative", func(c *Config) { c.BatchWait.TimeoutIters = -1 }, "batch_wait_timeout_iters: must be ≥ 0"},
		{"NaN", func(c *Config) { c.BatchWait.MaxTokensRatio = math.NaN() }, "batch_wait_max_tokens_ratio: must be in [0, 1]"},
		{"above 1", func(c *Config) { c.BatchWait.MaxTokensRatio = 1.5 }, "batch_wait_max_tokens_ratio: must be in [0, 1]"},
		{"unbounded budget", func(c *Config) { c.MaxBatchedTokens = 0 }, "batch_wait_max_tokens_ratio: needs scheduler.max_batched_tokens > 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := cfg
			tc.edit(&bad)
			err := bad.ValidateSettings()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func submitN(t *testing.T, c *Core, id uint64, prompt, out int) {
	t.Helper()
	p := make([]uint32, prompt)
	for i := range p {
		p[i] = uint32(id*1000) + uint32(i)
	}
	if err := c.Submit(Request{ID: id, Prompt: p, MaxOutput: out}); err != nil {
		t.Fatal(err)
	}
}
