package sim

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// goldenBase is the first 400 rows of the public conversation trace at 4×
// speed on 4 workers with a tight pool, so every engine path preempts,
// retracts or queues. Timing is pinned to the polynomial so the goldens
// do not move with the default timing model.
const goldenBase = `
traffic:
  source: {type: trace, format: mooncake, block_size: 512}
  load: {type: trace_timestamps, speedup: 4}
engine:
  backend: %s
  semantics: %s
  speculation: %s
  workers:
    aggregated:
      parallelism: {replicas: 4, attention_data: %d}
      scheduler: {max_sequences: 64}
      kv_cache: {block_size: %d, g1_backend: %s, capacity: {type: fixed, blocks: %d}}
      timing: {type: polynomial}
evaluation: {sla: {ttft_ms: 500, itl_ms: 50}}
`

// goldenPaths are the engine paths pinned by golden reports: one per
// scheduler, G1 manager, page size, speculation and data-parallel layout:
// the dp2 paths under engine.semantics mocker (the reference's lock-step
// ranks) and real (a dense model's independent ranks, issue 30 item 1).
var goldenPaths = []struct {
	name, backend, semantics, spec, g1 string
	dp, block, blocks                  int
}{
	{"vllm_native", "vllm", "real", "{kind: none}", "native", 1, 64, 2048},
	{"vllm_kvbm", "vllm", "real", "{kind: none}", "kvbm", 1, 64, 2048},
	{"trtllm", "trtllm", "real", "{kind: none}", "native", 1, 32, 4096},
	{"sglang_page1", "sglang", "real", "{kind: none}", "native", 1, 1, 131072},
	{"sglang_page16", "sglang", "real", "{kind: none}", "native", 1, 16, 8192},
	{"vllm_mtp", "vllm", "real", "{kind: mtp, num_speculative_tokens: 2, acceptance_rates: [0.8, 0.5]}", "native", 1, 64, 2048},
	{"vllm_dp2", "vllm", "mocker", "{kind: none}", "native", 2, 64, 1024},
	{"sglang_dp2", "sglang", "mocker", "{kind: none}", "native", 2, 16, 4096},
	{"vllm_dp2_real", "vllm", "real", "{kind: none}", "native", 2, 64, 1024},
}

// TestGoldenEnginePaths pins the report and the per-request records of every
// engine path, byte for byte (go test ./core/sim -update rewrites them).
func TestGoldenEnginePaths(t *testing.T) {
	trace := testTrace(t)
	for _, g := range goldenPaths {
		t.Run(g.name, func(t *testing.T) {
			cfg := fmt.Sprintf(goldenBase, g.backend, g.semantics, g.spec, g.dp, g.block, g.g1, g.blocks)
			rep, err := Predict(Inputs{Config: []byte(cfg), Trace: trace, TraceName: "conversation_400.jsonl", CapturePerRequest: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			js, err := rep.JSON()
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "golden/golden_"+g.name+".json", js)
			checkGolden(t, "golden/golden_"+g.name+"_requests.jsonl", rep.RequestsJSONL())
		})
	}
}

// checkGolden compares got with testdata/name (-update rewrites it).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./core/sim -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("differs from %s (if the change is intended, run go test ./core/sim -update and review the diff)", path)
	}
}
