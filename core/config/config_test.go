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
		if cfg.Engine.Workers.Aggregated.Scheduler.MaxBatchedTokens != 8192 || cfg.Traffic.Source.InputTokens != 1024 ||
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
		{"block size 1", "engine: {workers: {aggregated: {kv_cache: {block_size: 1}}}}", nil, "c.yaml:1: engine.workers.aggregated.kv_cache.block_size: must be ≥ 2 for vllm, got 1"},
		{"engine check line", "engine:\n  workers:\n    aggregated:\n      scheduler:\n        max_sequences: -1\n", nil, "c.yaml:5: engine.workers.aggregated.scheduler.max_sequences: must be ≥ 0 (0 = unbounded), got -1"},
		{"list item line", "engine:\n  speculation:\n    kind: mtp\n    num_speculative_tokens: 2\n    acceptance_rates:\n      - 0.5\n      - 2\n", nil, "c.yaml:7: engine.speculation.acceptance_rates[1]: must be a finite number in [0, 1], got 2"},
		{"set over a written key has no line", "engine:\n  workers:\n    aggregated:\n      parallelism: {replicas: 2}\n", []string{"engine.workers.aggregated.parallelism.replicas=0"}, "c.yaml: engine.workers.aggregated.parallelism.replicas: must be ≥ 1, got 0"},
		{"set has no line", "", []string{"engine.workers.aggregated.scheduler.max_model_len=-1"}, "c.yaml: engine.workers.aggregated.scheduler.max_model_len: must be ≥ 0, got -1"},
		{"sglang page multiple", "engine: {backend: sglang, workers: {aggregated: {kv_cache: {block_size: 3}}}}", nil, "c.yaml: engine.workers.aggregated.sglang.chunked_prefill_size: must be a multiple of kv_cache.block_size (the page size, 3), got 8192"},
		{"bad enum", "engine: {backend: tgi}", nil, `c.yaml:1: engine.backend: must be one of vllm, sglang, trtllm, got "tgi"`},
		{"bad bool", "engine: {workers: {aggregated: {scheduler: {chunked_prefill: maybe}}}}", nil, "chunked_prefill: must be true or false"},
		{"nan", "traffic: {load: {speedup: .nan}}", nil, "traffic.load.speedup: must be a finite number"},
		{"not a mapping", "- a\n- b\n", nil, "c.yaml: the config must be a YAML mapping"},
		{"list expected", "traffic: {source: {paths: x.jsonl}}", nil, "traffic.source.paths: must be a list"},
		{"bad yaml", "engine: {", nil, "c.yaml: "},
		{"unknown set path", "", []string{"engine.gpus=4"}, "engine.gpus: unknown key"},
		{"bad set", "", []string{"novalue"}, `--set "novalue": want PATH=VALUE`},
		{"poisson on trace", "traffic: {source: {type: trace, paths: [a]}, load: {type: poisson}}", nil, "traffic.load.type: poisson needs a synthetic source"},
		{"e2e with ttft", "evaluation: {sla: {e2e_ms: 1, ttft_ms: 1}}", nil, "evaluation.sla.e2e_ms: cannot be combined"},
		{"negative speedup", "engine: {workers: {aggregated: {timing: {speedup: -1}}}}", nil, "timing.speedup: must be ≥ 0"},
		{"two documents", "a: 1\n---\nb: 2\n", nil, "c.yaml: more than one YAML document"},
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
