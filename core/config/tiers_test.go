package config

import (
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/kv/tiers"
)

// Lower tiers in YAML: the defaults of spec §5.1, and each rejected
// combination with an error that names its key (and line).
func TestTiersConfig(t *testing.T) {
	kvbm := func(tiers string) string {
		return "engine:\n  workers:\n    aggregated:\n      kv_cache:\n        g1_backend: kvbm\n        tiers: " + tiers + "\n"
	}
	for _, tc := range []struct {
		name, yaml, err string
	}{
		{"G2", kvbm(`{g2: {blocks: 1000}}`), ""},
		{"G2 G3 G4 with every knob", kvbm(`{offload_batch_blocks: 8, g2: {blocks: 1000, write_gb_per_second: 25, read_gb_per_second: 0}, g3: {blocks: 9000, read_gb_per_second: 3}, g4: {enabled: true}}`), ""},
		{"trtllm", "engine: {backend: trtllm, workers: {aggregated: {kv_cache: {g1_backend: kvbm, tiers: {g2: {blocks: 10}}}}}}", ""},
		{"native G1", "engine: {workers: {aggregated: {kv_cache: {tiers: {g2: {blocks: 10}}}}}}",
			"engine.workers.aggregated.kv_cache.tiers: need engine.workers.aggregated.kv_cache.g1_backend: kvbm"},
		{"G3 without G2", kvbm(`{g3: {blocks: 10}}`), "c.yaml:6: engine.workers.aggregated.kv_cache.tiers.g3: needs g2.blocks > 0"},
		{"G4 without G2", kvbm(`{g4: {enabled: true}}`), "engine.workers.aggregated.kv_cache.tiers.g4: needs g2.blocks > 0"},
		{"sglang", "engine: {backend: sglang, workers: {aggregated: {kv_cache: {g1_backend: kvbm, tiers: {g2: {blocks: 10}}}}}}",
			"engine.workers.aggregated.kv_cache.tiers: not supported by the sglang backend"},
		{"no prefix caching", kvbm(`{g2: {blocks: 10}}`) + "        prefix_caching: false\n",
			"engine.workers.aggregated.kv_cache.tiers: need engine.workers.aggregated.kv_cache.prefix_caching: true"},
		{"negative bandwidth", kvbm(`{g2: {blocks: 10, write_gb_per_second: -1}}`), "kv_cache.tiers.g2.write_gb_per_second: must be 0 (instant) or in [0.001, 1e+06], got -1"},
		{"tiny bandwidth (issue 29 item 10)", kvbm(`{g2: {blocks: 10, write_gb_per_second: 1e-300}}`), "kv_cache.tiers.g2.write_gb_per_second: must be 0 (instant) or in [0.001, 1e+06], got 1e-300"},
		{"negative batch", kvbm(`{offload_batch_blocks: -2, g2: {blocks: 10}}`), "kv_cache.tiers.offload_batch_blocks: must be ≥ 0"},
		{"unknown key", kvbm(`{g5: {blocks: 10}}`), "kv_cache.tiers.g5"},
		{"disaggregated prefill", "engine: {mode: disaggregated, workers: {prefill: {kv_cache: {g1_backend: kvbm, tiers: {g2: {blocks: 10}}}}}}", ""},
		{"disaggregated decode native", "engine: {mode: disaggregated, workers: {decode: {kv_cache: {tiers: {g2: {blocks: 10}}}}}}",
			"engine.workers.decode.kv_cache.tiers: need"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("c.yaml", []byte(tc.yaml), nil)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("%v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if tc.err == "" && tc.name == "G2" {
				d := tiers.DefaultSettings()
				got := cfg.Engine.Workers.Aggregated.KVCache.Tiers.Settings(64, 1)
				if got.G1ToG2 != d.G1ToG2 || got.G3ToG2 != d.G3ToG2 || got.G4ToG2 != d.G4ToG2 || got.BatchBlocks != 32 || got.G2Blocks != 1000 {
					t.Errorf("settings %+v, want the defaults with g2 1000", got)
				}
			}
		})
	}
}
