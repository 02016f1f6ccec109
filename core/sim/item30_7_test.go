package sim

import (
	"strings"
	"testing"
)

// item30_7Trace mixes prompts within max_batched_tokens (1024, 2048) and
// past it (3072, 4096) when the budget is 2048.
const item30_7Trace = `{"timestamp": 0, "input_length": 1024, "output_length": 4, "hash_ids": [1, 2]}
{"timestamp": 10, "input_length": 3072, "output_length": 4, "hash_ids": [3, 4, 5, 6, 7, 8]}
{"timestamp": 20, "input_length": 2048, "output_length": 4, "hash_ids": [9, 10, 11, 12]}
{"timestamp": 30, "input_length": 4096, "output_length": 4, "hash_ids": [13, 14, 15, 16, 17, 18, 19, 20]}
`

const item30_7Config = `
traffic:
  source: {type: trace, format: mooncake, block_size: 512}
engine:
  workers:
    aggregated:
      scheduler: {max_batched_tokens: 2048}
      kv_cache: {block_size: 64, capacity: {type: fixed, blocks: 1024}}
      timing: {type: polynomial}
`

// Issue 30 item 7: with scheduler.chunked_prefill: false and prompts longer
// than max_batched_tokens, a run used to abort mid-way ("worker 0 cannot
// make progress"). Now a config vLLM refuses at start-up
// (max_batched_tokens < max_model_len without chunked prefill,
// vllm/config/scheduler.py SchedulerConfig._verify_args) is refused naming
// both keys, and without max_model_len each prompt past the budget is
// rejected as max_batched_tokens while the others complete (the choice and
// why: engine.Config.PromptReason). The sglang backend, which chunks by its
// own sglang.chunked_prefill_size, refuses the switch instead of ignoring it.
func TestItem30_7ChunkedPrefillImpossible(t *testing.T) {
	for _, tc := range []struct {
		name                string
		sets                []string
		wantErr             []string // substrings of the error; nil: a report
		completed, rejected int      // with a report
	}{
		{"vllm chunked prefill off, some prompts too long",
			[]string{"engine.workers.aggregated.scheduler.chunked_prefill=false"}, nil, 2, 2},
		{"trtllm chunked prefill off, some prompts too long",
			[]string{"engine.backend=trtllm", "engine.workers.aggregated.scheduler.chunked_prefill=false"}, nil, 2, 2},
		{"vllm chunked prefill on: every prompt runs",
			nil, nil, 4, 0},
		{"vllm chunked prefill off, unbounded budget",
			[]string{"engine.workers.aggregated.scheduler.chunked_prefill=false", "engine.workers.aggregated.scheduler.max_batched_tokens=0"}, nil, 4, 0},
		{"vllm chunked prefill off, budget ≥ max_model_len",
			[]string{"engine.workers.aggregated.scheduler.chunked_prefill=false", "engine.workers.aggregated.scheduler.max_model_len=2048"}, nil, 1, 3},
		{"vllm chunked prefill off, budget < max_model_len: refused",
			[]string{"engine.workers.aggregated.scheduler.chunked_prefill=false", "engine.workers.aggregated.scheduler.max_model_len=8192"},
			[]string{"engine.workers.aggregated.scheduler.max_batched_tokens: must be ≥ scheduler.max_model_len (8192)", "chunked_prefill: false", "got 2048"}, 0, 0},
		{"sglang chunked prefill off: refused (it chunks by sglang.chunked_prefill_size)",
			[]string{"engine.backend=sglang", "engine.workers.aggregated.scheduler.chunked_prefill=false"},
			[]string{"engine.workers.aggregated.scheduler.chunked_prefill: false is not modelled by the sglang backend", "sglang.chunked_prefill_size"}, 0, 0},
		{"sglang chunked prefill on: every prompt runs",
			[]string{"engine.backend=sglang", "engine.workers.aggregated.kv_cache.block_size=1", "engine.workers.aggregated.kv_cache.capacity.blocks=65536"}, nil, 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Inputs{Config: []byte(item30_7Config), Sets: tc.sets, Trace: []byte(item30_7Trace), TraceName: "mixed.jsonl"}
			rep, err := Predict(in, nil)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("got a report, want an error containing %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("err = %v\nwant it to contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v, want a report", err)
			}
			o := rep.Outcomes
			if o.Completed != tc.completed || o.Rejected != tc.rejected || o.Unfinished != 0 {
				t.Fatalf("completed %d rejected %d unfinished %d, want %d, %d, 0 (by reason %v)", o.Completed, o.Rejected, o.Unfinished, tc.completed, tc.rejected, o.RejectedBy)
			}
			// Past max_model_len (2048, a prompt reaching it) the reason
			// is max_model_len; else the budget's.
			why := "max_batched_tokens"
			if strings.Contains(tc.name, "max_model_len") {
				why = "max_model_len"
			}
			if tc.rejected > 0 && o.RejectedBy[why] != tc.rejected {
				t.Fatalf("rejected by reason %v, want %d as %s", o.RejectedBy, tc.rejected, why)
			}
		})
	}
}
