package config

import (
	"strings"
	"testing"
)

func TestEngineBlocks(t *testing.T) {
	for _, tc := range []struct {
		yaml, err string
	}{
		{`engine: {backend: sglang, workers: {aggregated: {sglang: {schedule_policy: lpm, chunked_prefill_size: 4096}}}}`, ""},
		{`engine: {backend: sglang, workers: {aggregated: {kv_cache: {block_size: 3}}}}`, "chunked_prefill_size: must be a multiple"},
		{`engine: {backend: sglang, workers: {aggregated: {sglang: {schedule_policy: random}}}}`, "schedule_policy"},
		{`engine: {backend: sglang, workers: {aggregated: {sglang: {schedule_conservativeness: 1.5}}}}`, "schedule_conservativeness"},
		{`engine: {speculation: {kind: mtp, num_speculative_tokens: 2, acceptance_rates: [0.9, 0.5]}}`, ""},
		{`engine: {speculation: {kind: mtp, num_speculative_tokens: 6}}`, "num_speculative_tokens"},
		{`engine: {speculation: {kind: mtp, num_speculative_tokens: 2, acceptance_rates: [1.1]}}`, "acceptance_rates[0]"},
		{`engine: {speculation: {kind: mtp, num_speculative_tokens: 2, acceptance_rates: [.nan]}}`, "acceptance_rates[0]"},
		{`engine: {speculation: {kind: mtp, num_speculative_tokens: 1}, workers: {aggregated: {timing: {decode_speedup: 2}}}}`, "engine.workers.aggregated.timing.decode_speedup: must be 1 with speculative decoding"},
		{`engine: {speculation: {kind: medusa}}`, "speculation.kind"},
		// Issue 30 item 4: ngram (verification only) is a kind; a separate
		// draft model is not modelled, so it is refused, naming the key.
		{`engine: {speculation: {kind: ngram, num_speculative_tokens: 3}}`, ""},
		{`engine: {speculation: {kind: eagle, num_speculative_tokens: 3}}`, ""},
		{`engine: {speculation: {kind: draft_model, num_speculative_tokens: 3}}`, "engine.speculation.kind: must be one of none, mtp, eagle, ngram"},
		{`engine: {mode: disaggregated, backend: trtllm}`, "not supported with backend trtllm"},
		{`engine: {workers: {aggregated: {kv_cache: {g1_backend: kvbm}}}}`, ""},
	} {
		cfg, err := Parse("c.yaml", []byte(tc.yaml), nil)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.yaml, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.yaml, err, tc.err)
		case tc.err == "" && cfg.Engine.Workers.Aggregated.SGLang.MaxPrefillTokens != 16384:
			t.Errorf("%s: sglang defaults lost", tc.yaml)
		}
	}
}
