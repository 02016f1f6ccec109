package config

import (
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/engine"
)

// TestItem33_6MixedChunkKey: scheduler.enable_mixed_chunk is SGLang's
// --enable-mixed-chunk. It selects the SGLang core's pass shape together
// with engine.semantics, and is refused, naming the key, wherever it would
// mean nothing: other backends, mocker semantics, speculative decoding,
// disaggregated workers. A misspelt key is an unknown key.
func TestItem33_6MixedChunkKey(t *testing.T) {
	const key = "engine.workers.aggregated.scheduler.enable_mixed_chunk"
	tests := []struct {
		name string
		sets []string
		loop engine.SGLangLoop
		err  string // "" accepted; else a substring of the error
	}{
		{"sglang real default", []string{"engine.backend=sglang"}, engine.PrefillFirst, ""},
		{"sglang real mixed", []string{"engine.backend=sglang", key + "=true"}, engine.MixedChunk, ""},
		{"sglang mocker", []string{"engine.backend=sglang", "engine.semantics=mocker"}, engine.AdditivePass, ""},
		{"sglang mocker mixed", []string{"engine.backend=sglang", "engine.semantics=mocker", key + "=true"}, 0, key + ": needs engine.semantics real"},
		{"vllm mixed", []string{key + "=true"}, 0, key + ": SGLang's --enable-mixed-chunk, backend sglang only"},
		{"trtllm mixed", []string{"engine.backend=trtllm", key + "=true"}, 0, key + ": SGLang's --enable-mixed-chunk, backend sglang only"},
		{"vllm false", []string{key + "=false"}, 0, ""},
		{"speculation", []string{"engine.backend=sglang", key + "=true", "engine.speculation={kind: mtp, num_speculative_tokens: 1, acceptance_rates: [0.5]}"}, 0, key + ": not with engine.speculation"},
		{"disaggregated", []string{"engine.backend=sglang", "engine.mode=disaggregated", "engine.workers.prefill.scheduler.enable_mixed_chunk=true"}, 0,
			"engine.workers.prefill.scheduler.enable_mixed_chunk: has no effect on a disaggregated worker"},
		{"misspelt", []string{"engine.backend=sglang", "engine.workers.aggregated.scheduler.enable_mixed_chunks=true"}, 0, "enable_mixed_chunks"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("c.yaml", []byte("{}"), tc.sets)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Engine.Backend != "sglang" {
				return
			}
			if got := cfg.EngineConfig(&cfg.Engine.Workers.Aggregated).SGLang.Loop; got != tc.loop {
				t.Fatalf("loop %d, want %d", got, tc.loop)
			}
		})
	}
}
