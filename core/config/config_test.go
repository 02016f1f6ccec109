package config

import (
	"strings"
	"testing"
)

func TestEmptyConfigIsDefault(t *testing.T) {
	for _, text := range []string{"", "{}", "# nothing\n"} {
		cfg, err := Parse("c.yaml", []byte(text), nil)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if cfg.Engine.Workers.Aggregated.Scheduler.MaxBatchedTokens != 8192 || cfg.Traffic.Source.InputTokens != (Tokens{N: 1024}) ||
			cfg.Engine.Workers.Aggregated.BlockSize("vllm") != 64 || cfg.Execution.Seed != 42 {
			t.Fatalf("%q: defaults not applied: %+v", text, cfg)
		}
	}
}

func TestPartialMappingsKeepDefaults(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte("engine:\n  workers:\n    aggregated:\n      scheduler: {max_sequences: 16}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Engine.Workers.Aggregated.Scheduler
	if s.MaxSequences != 16 || s.MaxBatchedTokens != 8192 || !s.ChunkedPrefill || s.Preemption != "lifo" {
		t.Fatalf("scheduler %+v", s)
	}
}

func TestSet(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte("router: {policy: random}"), []string{
		"engine.workers.aggregated.parallelism.replicas=4",
		"traffic.source={type: trace, paths: [a.jsonl]}",
		"router.policy=round_robin",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Engine.Workers.Aggregated.Parallelism.Replicas != 4 || cfg.Traffic.Source.Paths[0] != "a.jsonl" ||
		cfg.Traffic.Source.BlockSize != 512 || cfg.Router.Policy != "round_robin" {
		t.Fatalf("cfg %+v", cfg)
	}
}

func TestErrorsNamePaths(t *testing.T) {
	tests := []struct {
		name, text string
		sets       []string
		want       string
	}{
		{"unknown top key", "trafic: {}", nil, "c.yaml:1: trafic: unknown key"},
		{"unknown nested key", "engine:\n  workers:\n    aggregated:\n      schedular: {}\n", nil, "c.yaml:4: engine.workers.aggregated.schedular: unknown key"},
		{"wrong type", "engine:\n  workers:\n    aggregated:\n      parallelism: {replicas: many}\n", nil, "c.yaml:4: engine.workers.aggregated.parallelism.replicas: must be an integer"},
		{"zero workers", "engine: {workers: {aggregated: {parallelism: {replicas: 0}}}}", nil, "c.yaml:1: engine.workers.aggregated.parallelism.replicas: must be ≥ 1, got 0"},
		{"negative router knob", "router:\n  policy: kv_router\n  kv: {overlap_score_credit_decay: -1}\n", nil, "c.yaml:3: router.kv.overlap_score_credit_decay: must be ≥ 0, got -1"},
		{"block size 1", "engine: {workers: {aggregated: {kv_cache: {block_size: 1}}}}", nil, "c.yaml:1: engine.workers.aggregated.kv_cache.block_size: must be ≥ 2 for vllm, got 1"},
		{"engine check line", "engine:\n  workers:\n    aggregated:\n      scheduler:\n        max_sequences: -1\n", nil, "c.yaml:5: engine.workers.aggregated.scheduler.max_sequences: must be ≥ 0 (0 = unbounded), got -1"},
		{"list item line", "engine:\n  speculation:\n    kind: mtp\n    num_speculative_tokens: 2\n    acceptance_rates:\n      - 0.5\n      - 2\n", nil, "c.yaml:7: engine.speculation.acceptance_rates[1]: must be a finite number in [0, 1], got 2"},
		{"set over a written key blames --set", "engine:\n  workers:\n    aggregated:\n      parallelism: {replicas: 2}\n", []string{"engine.workers.aggregated.parallelism.replicas=0"}, "--set engine.workers.aggregated.parallelism.replicas: must be ≥ 1, got 0"},
		{"unknown key from --set blames --set", "", []string{"engine.bogus=1"}, "--set engine.bogus: unknown key"},
		{"bad --set value blames --set", "", []string{"engine.workers.aggregated.parallelism.replicas=abc"}, `--set engine.workers.aggregated.parallelism.replicas: must be an integer, got "abc"`},
		{"set blames --set", "", []string{"engine.workers.aggregated.scheduler.max_model_len=-1"}, "--set engine.workers.aggregated.scheduler.max_model_len: must be ≥ 0, got -1"},
		{"sglang page multiple", "engine: {backend: sglang, workers: {aggregated: {kv_cache: {block_size: 3}}}}", nil, "c.yaml: engine.workers.aggregated.sglang.chunked_prefill_size: must be a multiple of kv_cache.block_size (the page size, 3), got 8192"},
		{"bad enum", "engine: {backend: tgi}", nil, `c.yaml:1: engine.backend: must be one of vllm, sglang, trtllm, got "tgi"`},
		{"bad dtype", "engine: {dtype: int3}", nil, `c.yaml:1: engine.dtype: must be one of auto, bf16, fp16, fp8, fp4, got "int3"`},
		{"bad kv dtype", "engine: {workers: {aggregated: {kv_cache: {dtype: fp4}}}}", nil, `c.yaml:1: engine.workers.aggregated.kv_cache.dtype: must be one of auto, bf16, fp16, fp8, got "fp4"`},
		{"negative ramp", "traffic: {load: {type: concurrency, ramp_up_seconds: -1}}", nil, "c.yaml:1: traffic.load.ramp_up_seconds: must be in [0, 1e+09], got -1"},
		{"async in disagg", "engine:\n  mode: disaggregated\n  workers:\n    decode: {scheduler: {async_scheduling: true}}\n", nil, "engine.workers.decode.scheduler.async_scheduling: not simulated in disaggregated mode"},
		{"bad async", "engine: {workers: {aggregated: {scheduler: {async_scheduling: sometimes}}}}", nil, "async_scheduling: must be true or false"},
		{"bad bool", "engine: {workers: {aggregated: {scheduler: {chunked_prefill: maybe}}}}", nil, "chunked_prefill: must be true or false"},
		{"nan", "traffic: {load: {speedup: .nan}}", nil, "traffic.load.speedup: must be a finite number"},
		{"not a mapping", "- a\n- b\n", nil, "c.yaml: the config must be a YAML mapping"},
		{"list expected", "traffic: {source: {paths: x.jsonl}}", nil, "traffic.source.paths: must be a list"},
		{"bad yaml", "engine: {", nil, "c.yaml:1: did not find expected node content"},
		{"unclosed bracket on line 3", "x: 1\ny: 2\nengine: {mode: aggregated\nrouter: {}\n", nil, "c.yaml:3: did not find expected ',' or '}': the '{' opened on this line is never closed"},
		{"unclosed list, brackets in comments and quotes", "x: 1 # {\ny: \"{\"\ntraffic: {source: {paths: [a.jsonl\n", nil, "c.yaml:3: did not find expected ',' or ']': the '[' opened on this line is never closed"},
		{"unknown set path", "", []string{"engine.gpus=4"}, "engine.gpus: unknown key"},
		{"bad set", "", []string{"novalue"}, `--set "novalue": want PATH=VALUE`},
		{"poisson on trace", "traffic: {source: {type: trace, paths: [a]}, load: {type: poisson}}", nil, "traffic.load.type: poisson needs a synthetic source"},
		{"e2e with ttft", "evaluation: {sla: {e2e_ms: 1, ttft_ms: 1}}", nil, "evaluation.sla.e2e_ms: cannot be combined"},
		{"negative speedup", "engine: {workers: {aggregated: {timing: {speedup: -1}}}}", nil, "timing.speedup: must be ≥ 0"},
		{"two documents", "a: 1\n---\nb: 2\n", nil, "c.yaml: more than one YAML document"},
		// Issue 11: hostile values inside valid syntax.
		{"replicas too many", "engine:\n  workers:\n    aggregated:\n      parallelism: {replicas: 100000}\n", nil, "c.yaml:4: engine.workers.aggregated.parallelism.replicas: must be ≤ 4096, got 100000"},
		{"tensor too large", "engine: {workers: {aggregated: {parallelism: {tensor: 4096}}}}", nil, "c.yaml:1: engine.workers.aggregated.parallelism: tensor, pipeline, attention_data, moe_tensor and moe_expert must be ≤ 1024"},
		{"gpus too many", "engine: {workers: {aggregated: {parallelism: {replicas: 4096, tensor: 1024}}}}", nil, "parallelism.replicas: replicas × tensor × pipeline × attention_data must be ≤ 1048576 GPUs"},
		{"stop requests too many", "traffic:\n  stop: {requests: 1000000000}\n", nil, "c.yaml:2: traffic.stop.requests: must be ≤ 10000000"},
		{"input tokens too many", "traffic: {source: {input_tokens: 1000000000}}", nil, "c.yaml:1: traffic.source.input_tokens: must be ≤ 16777216"},
		{"output tokens too many", "traffic: {source: {output_tokens: 1000000000}}", nil, "traffic.source.output_tokens: must be ≤ 16777216"},
		{"blocks too many", "engine: {workers: {aggregated: {kv_cache: {capacity: {blocks: 1000000000}}}}}", nil, "c.yaml:1: engine.workers.aggregated.kv_cache.capacity.blocks: must be ≤ 16777216"},
		{"acceptance rates too long", "engine: {speculation: {kind: mtp, num_speculative_tokens: 2, acceptance_rates: [0.5, 0.5, 0.5, 0.5, 0.5, 0.5]}}", nil, "engine.speculation.acceptance_rates: must have at most 5 entries, got 6"},
		{"poisson rate zero", "traffic: {load: {type: poisson, requests_per_second: 0}}", nil, "traffic.load.requests_per_second: must be ≥ 1e-06 for poisson"},
		{"poisson rate tiny", "traffic: {load: {type: poisson, requests_per_second: 1e-300}}", nil, "traffic.load.requests_per_second: must be ≥ 1e-06"},
		{"constant rate zero", "traffic: {load: {type: constant_rate}}", nil, "traffic.load.requests_per_second: must be ≥ 1e-06 for constant_rate"},
		{"interval huge", "traffic: {load: {type: constant_rate, interval_ms: 1e300}}", nil, "traffic.load.interval_ms: must be ≤ 1e+12"},
		{"trace block size huge", "traffic: {source: {block_size: 1000000000000}}", nil, "c.yaml:1: traffic.source.block_size: must be ≤ 16777216"},
		{"kv block size huge", "engine: {workers: {aggregated: {kv_cache: {block_size: 1000000000000}}}}", nil, "c.yaml:1: engine.workers.aggregated.kv_cache.block_size: must be ≤ 65536"},
		{"fixed prefill huge", "engine: {workers: {aggregated: {timing: {prefill_ms: 1e300, decode_ms: 1}}}}", nil, "engine.workers.aggregated.timing: prefill_ms and decode_ms must be ≤ 3155760000000"},
	}
	for _, tc := range tests {
		_, err := Parse("c.yaml", []byte(tc.text), tc.sets)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: multi-line error %q", tc.name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("{}"))
	f.Add([]byte("engine: {workers: {aggregated: {parallelism: {replicas: 8}}}}"))
	f.Add([]byte("traffic:\n  source: {type: trace, paths: [a.jsonl]}\n  load: {type: concurrency, concurrency: 4}\n"))
	f.Add([]byte("a: &x {b: *x}"))
	f.Add([]byte("evaluation: {sla: {ttft_ms: 500, itl_ms: 50}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("f.yaml", data, nil)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted config fails validation: %v", err)
		}
	})
}
