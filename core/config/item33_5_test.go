package config

import (
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/engine"
)

// TestItem33_5BatchWaitParse: scheduler.batch_wait_timeout_iters and
// scheduler.batch_wait_max_tokens_ratio reach the TRT-LLM engine; other
// backends and impossible values are refused naming the key; 0 / 0 is the
// default.
func TestItem33_5BatchWaitParse(t *testing.T) {
	const key = "engine.workers.aggregated.scheduler."
	for _, tc := range []struct {
		name, backend, sched string
		want                 engine.BatchWait
		err                  string
	}{
		{"default off", "trtllm", "{}", engine.BatchWait{}, ""},
		{"InferenceMAX 1k/1k", "trtllm", "{batch_wait_timeout_iters: 20, batch_wait_max_tokens_ratio: 0.9}", engine.BatchWait{TimeoutIters: 20, MaxTokensRatio: 0.9}, ""},
		{"vllm refused", "vllm", "{batch_wait_timeout_iters: 20}", engine.BatchWait{}, key + "batch_wait_timeout_iters: TensorRT-LLM's batch waiting, backend trtllm only (not vllm)"},
		{"sglang refused", "sglang", "{batch_wait_max_tokens_ratio: 0.5}", engine.BatchWait{}, key + "batch_wait_max_tokens_ratio: TensorRT-LLM's batch waiting, backend trtllm only (not sglang)"},
		{"negative iters", "trtllm", "{batch_wait_timeout_iters: -1}", engine.BatchWait{}, key + "batch_wait_timeout_iters: must be ≥ 0"},
		{"NaN ratio", "trtllm", "{batch_wait_max_tokens_ratio: .nan}", engine.BatchWait{}, key + "batch_wait_max_tokens_ratio: must be a finite number"},
		{"ratio above 1", "trtllm", "{batch_wait_max_tokens_ratio: 1.2}", engine.BatchWait{}, key + "batch_wait_max_tokens_ratio: must be in [0, 1]"},
		{"ratio without a token budget", "trtllm", "{max_batched_tokens: 0, batch_wait_timeout_iters: 5, batch_wait_max_tokens_ratio: 0.5}", engine.BatchWait{}, key + "batch_wait_max_tokens_ratio: needs scheduler.max_batched_tokens > 0"},
		{"fractional iters", "trtllm", "{batch_wait_timeout_iters: 2.5}", engine.BatchWait{}, key + "batch_wait_timeout_iters"},
		{"unknown key", "trtllm", "{batch_wait_timeout_ms: 5}", engine.BatchWait{}, key + "batch_wait_timeout_ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := "engine:\n  backend: " + tc.backend + "\n  workers:\n    aggregated:\n      scheduler: " + tc.sched + "\n"
			cfg, err := Parse("c.yaml", []byte(yaml), nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.EngineConfig(&cfg.Engine.Workers.Aggregated).BatchWait; got != tc.want {
				t.Errorf("batch wait %+v, want %+v", got, tc.want)
			}
		})
	}
}
