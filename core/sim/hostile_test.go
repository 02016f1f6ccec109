package sim

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 11: every config in testdata/hostile (with the trace, model or
// profile files it names beside it) is an error, never a panic, a hang or a
// wrapped clock. The first line of each YAML is "# want: SUBSTRING", or
// "# want: report" for a case that must run (the cross-target checks of
// randomized features). The CLI, Worker and page tests feed the same files
// to their front ends and compare the answers.
func TestHostileInputs(t *testing.T) {
	const dir = "testdata/hostile"
	names, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no hostile configs: %v", err)
	}
	for _, path := range names {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := bytes.Cut(data, []byte("\n"))
			want, ok := strings.CutPrefix(string(first), "# want: ")
			if !ok {
				t.Fatalf("first line %q, want \"# want: SUBSTRING\"", first)
			}
			in := Inputs{Config: data, ConfigName: name, ReadFile: func(p string) ([]byte, error) {
				return os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
			}}
			rep, err := Predict(in, nil)
			if want == "report" {
				if err != nil {
					t.Fatalf("err = %v, want a report", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got a report (%d requests), want an error containing %q", len(rep.Requests()), want)
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, want)
			}
		})
	}
}

// An HF config with kv_lora_rank: 1 needs two bytes of KV per token, so the
// default capacity comes to hundreds of millions of blocks, which the pools
// would allocate up front. The pool is cut to what the run can touch.
func TestHostileTinyKVPerTokenCapsPool(t *testing.T) {
	model := []byte(`{"num_hidden_layers": 1, "hidden_size": 64, "num_attention_heads": 8, "intermediate_size": 128,
	  "vocab_size": 100, "kv_lora_rank": 1, "qk_nope_head_dim": 8, "qk_rope_head_dim": 0, "v_head_dim": 8, "torch_dtype": "bfloat16"}`)
	for _, backend := range []string{"vllm", "sglang"} {
		t.Run(backend, func(t *testing.T) {
			cfg := "traffic: {source: {type: synthetic, input_tokens: 100, output_tokens: 3}, stop: {requests: 5}}\nengine: {backend: " + backend + ", model: tiny.json}"
			rep, err := Predict(Inputs{Config: []byte(cfg), ModelConfig: model, ModelConfigName: "tiny.json"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range rep.Workers {
				if w.TotalBlocks < 1 || w.TotalBlocks > 1000 {
					t.Fatalf("worker %d: %d blocks, want the run's need (< 1000)", w.Worker, w.TotalBlocks)
				}
			}
		})
	}
}
