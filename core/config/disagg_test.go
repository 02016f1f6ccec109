package config

import (
	"errors"
	"strings"
	"testing"
)

// The disaggregated keys: engine.kv_transfer and the prefill/decode roles,
// each checked under its own path; the sections a mode does not use are
// errors naming their line (or --set); TensorRT-LLM is refused.
func TestDisaggregatedConfig(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		sets []string
		err  string
	}{
		{"engine: {mode: disaggregated}", nil, ""},
		{"engine: {mode: disaggregated, kv_transfer: {handoff: direct, bytes_per_token: 4096, bandwidth_gb_per_second: 0, timing_mode: full_prompt}}", nil, ""},
		{"engine: {mode: disaggregated, kv_transfer: {bandwidth_gb_per_second: null}}", nil, ""},
		{"engine: {mode: disaggregated, kv_transfer: {handoff: nixl}}", nil, "c.yaml:1: engine.kv_transfer.handoff: must be one of bootstrap, direct"},
		{"engine: {mode: disaggregated, kv_transfer: {timing_mode: partial}}", nil, "engine.kv_transfer.timing_mode: must be one of destination_missing, full_prompt"},
		{"engine: {mode: disaggregated, kv_transfer: {bandwidth_gb_per_second: -1}}", nil, "c.yaml:1: engine.kv_transfer.bandwidth_gb_per_second: must be null or in [0, 1e+06]"},
		{"engine: {mode: disaggregated, kv_transfer: {bandwidth_gb_per_second: fast}}", nil, "engine.kv_transfer.bandwidth_gb_per_second: must be a number"},
		{"engine: {mode: disaggregated, kv_transfer: {bytes_per_token: lots}}", nil, "engine.kv_transfer.bytes_per_token: must be auto or a number in (0, 2^40], got \"lots\""},
		{"engine: {mode: disaggregated, kv_transfer: {bytes_per_token: 0}}", nil, "engine.kv_transfer.bytes_per_token: must be auto"},
		{"engine: {mode: disaggregated, kv_transfer: {speed: 1}}", nil, "c.yaml:1: engine.kv_transfer.speed: unknown key"},
		{"engine: {mode: disaggregated, workers: {decode: {parallelism: {replicas: 0}}}}", nil, "engine.workers.decode.parallelism.replicas: must be ≥ 1"},
		{"engine: {mode: disaggregated, workers: {prefill: {kv_cache: {block_size: 1}}}}", nil, "engine.workers.prefill.kv_cache.block_size: must be ≥ 2"},
		{"engine:\n  mode: disaggregated\n  workers:\n    aggregated: {parallelism: {replicas: 2}}", nil,
			"c.yaml:4: engine.workers.aggregated: not used with engine.mode disaggregated; configure engine.workers.prefill and engine.workers.decode"},
		{"engine: {mode: disaggregated}", []string{"engine.workers.aggregated.parallelism.replicas=2"}, "--set engine.workers.aggregated: not used with engine.mode disaggregated"},
		{"engine:\n  workers:\n    decode: {parallelism: {replicas: 2}}", nil, "c.yaml:3: engine.workers.decode: not used with engine.mode aggregated; configure engine.workers.aggregated"},
		{"engine: {kv_transfer: {bandwidth_gb_per_second: 50}}", nil, "engine.kv_transfer: not used with engine.mode aggregated"},
		{"engine: {mode: disaggregated, backend: trtllm}", nil, "not supported with backend trtllm"},
		{"engine: {mode: afd}", nil, "engine.mode: must be one of aggregated, disaggregated"},
	} {
		cfg, err := Parse("c.yaml", []byte(tc.yaml), tc.sets)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.yaml, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s %v: error %v, want %q", tc.yaml, tc.sets, err, tc.err)
		case tc.err == "" && cfg.Engine.Workers.Prefill.Scheduler.MaxSequences != 1:
			t.Errorf("%s: the prefill role's default max_sequences is 1 (spec §9.2)", tc.yaml)
		}
	}
	cfg, err := Parse("c.yaml", nil, nil)
	if k := cfg.Engine.KVTransfer; err != nil || k.Handoff != "bootstrap" || k.BytesPerToken != "auto" || k.BandwidthGBps != nil || k.TimingMode != "destination_missing" {
		t.Fatalf("kv_transfer defaults %+v (%v)", k, err)
	}
}

// predict takes one configuration: a search domain or the recommend
// sections are errors naming the key.
func TestPredictRejectsRecommend(t *testing.T) {
	for _, tc := range []struct{ yaml, err string }{
		{"engine:\n  workers:\n    aggregated:\n      parallelism: {replicas: {choices: [2, 4]}}", "c.yaml:4: engine.workers.aggregated.parallelism.replicas: a search domain ({choices} or {range}) is for `dynosim recommend`"},
		{"router: {temperature: {range: {min: 0, max: 1}}}", "c.yaml:1: router.temperature: a search domain"},
		{"optimization: {target: throughput}", "c.yaml:1: optimization: belongs to a `dynosim recommend` config"},
		{"engine: {}\noptimizer: {max_trials: 3}", "c.yaml:2: optimizer: belongs to a `dynosim recommend` config"},
	} {
		if _, err := Parse("c.yaml", []byte(tc.yaml), nil); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.err)
		}
	}
}

// A combination the simulator does not support is marked for a search's
// ledger (backend_topology), with its message unchanged.
func TestUnsupportedIsMarked(t *testing.T) {
	_, err := Parse("c.yaml", []byte("engine: {mode: disaggregated, backend: trtllm}"), nil)
	if !errors.Is(err, ErrUnsupported) || strings.Contains(err.Error(), "unsupported combination") {
		t.Fatalf("%v", err)
	}
}
