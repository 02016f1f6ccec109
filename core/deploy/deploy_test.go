package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/config"
	"gopkg.in/yaml.v3"
)

// TestItem32_3Deployable: for each topology, dgd.yaml parses with the
// DynamoGraphDeployment fields upstream's CRD requires and its GPUs add up
// to the config's; launch.sh passes bash -n and names the parallelism.
func TestItem32_3Deployable(t *testing.T) {
	cases := []struct {
		name, yaml string
		gpus       int
		services   map[string]string // name → subComponentType ("" aggregated)
		launch     []string          // substrings launch.sh must contain
		dgdArgs    []string          // substrings of some worker's args
	}{
		{
			name: "vllm agg TP2 x4 kv router",
			yaml: "engine: {backend: vllm, model: llama-3.1-8b, workers: {aggregated: {parallelism: {replicas: 4, tensor: 2}, scheduler: {max_sequences: 128, max_batched_tokens: 4096}, kv_cache: {block_size: 16, capacity: {memory_fraction: 0.85}}}}}\nrouter: {policy: kv_router}",
			gpus: 8, services: map[string]string{"VllmWorker": ""},
			launch:  []string{"--tensor-parallel-size 2", "--max-num-seqs 128", "--max-num-batched-tokens 4096", "--block-size 16", "--gpu-memory-utilization 0.85", "--router-mode kv", "CUDA_VISIBLE_DEVICES=6,7", "meta-llama/Llama-3.1-8B-Instruct", "vllm serve"},
			dgdArgs: []string{"--tensor-parallel-size 2", "--enable-prefix-caching"},
		},
		{
			name: "vllm disagg 2P+4D",
			yaml: "engine: {mode: disaggregated, backend: vllm, model: qwen3-32b, workers: {prefill: {parallelism: {replicas: 2, tensor: 2}}, decode: {parallelism: {replicas: 4, tensor: 4}}}}\nrouter: {policy: round_robin}",
			gpus: 20, services: map[string]string{"VllmPrefillWorker": "prefill", "VllmDecodeWorker": "decode"},
			launch:  []string{"--is-prefill-worker", "--is-decode-worker", "--tensor-parallel-size 4", "--router-mode round-robin", "VLLM_NIXL_SIDE_CHANNEL_PORT", "NODE\" = 2", "Qwen/Qwen3-32B"},
			dgdArgs: []string{"--is-prefill-worker", "--is-decode-worker"},
		},
		{
			name: "sglang DP",
			yaml: "engine: {backend: sglang, model: my-private-model, workers: {aggregated: {parallelism: {replicas: 2, tensor: 1, attention_data: 4}, kv_cache: {block_size: 16}}}}\nrouter: {policy: random}",
			gpus: 8, services: map[string]string{"SGLangWorker": ""},
			launch:  []string{"--tp 1", "--dp 4", "--page-size 16", "--max-running-requests", "--router-mode random", "sglang.launch_server", "MODEL_PATH"},
			dgdArgs: []string{"--dp 4", "--schedule-policy fcfs"},
		},
		{
			name: "trtllm PP",
			yaml: "engine: {backend: trtllm, model: llama-3.1-70b, workers: {aggregated: {parallelism: {replicas: 1, tensor: 2, pipeline: 2}}}}",
			gpus: 4, services: map[string]string{"TRTLLMWorker": ""},
			launch:  []string{"--tensor-parallel-size 2", "--pipeline-parallel-size 2", "--tp_size 2", "--pp_size 2", "--max_batch_size 256", "--max_num_tokens 8192", "--kv_cache_free_gpu_memory_fraction 0.9", "trtllm-serve", "CUDA_VISIBLE_DEVICES=0,1,2,3"},
			dgdArgs: []string{"--pipeline-parallel-size 2", "--kv-block-size 32"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := config.Parse("test.yaml", []byte(c.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			launch, dgd, err := Render(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			// launch.sh
			path := filepath.Join(t.TempDir(), "launch.sh")
			if err := os.WriteFile(path, launch, 0o755); err != nil {
				t.Fatal(err)
			}
			// js/wasm (make test-wasm) runs no processes; the native run
			// (make test-go) checks the syntax.
			if runtime.GOOS != "js" {
				if out, err := exec.Command("/bin/bash", "-n", path).CombinedOutput(); err != nil {
					t.Fatalf("bash -n: %v\n%s\n%s", err, out, launch)
				}
			}
			flat := strings.ReplaceAll(string(launch), " \\\n    ", " ")
			flat = strings.ReplaceAll(flat, "    ", "")
			for _, want := range c.launch {
				if !strings.Contains(flat, want) {
					t.Errorf("launch.sh lacks %q:\n%s", want, launch)
				}
			}
			// dgd.yaml, generically (as kubectl would see it) and typed
			var doc map[string]any
			if err := yaml.Unmarshal(dgd, &doc); err != nil {
				t.Fatalf("dgd.yaml: %v\n%s", err, dgd)
			}
			if doc["apiVersion"] != "nvidia.com/v1alpha1" || doc["kind"] != "DynamoGraphDeployment" {
				t.Fatalf("apiVersion/kind: %v %v", doc["apiVersion"], doc["kind"])
			}
			if md, _ := doc["metadata"].(map[string]any); md == nil || md["name"] == "" || md["name"] == nil {
				t.Fatalf("metadata.name missing")
			}
			spec, _ := doc["spec"].(map[string]any)
			svcs, _ := spec["services"].(map[string]any)
			if len(svcs) != len(c.services)+1 {
				t.Fatalf("services: %v", svcs)
			}
			fe, _ := svcs["Frontend"].(map[string]any)
			if fe["componentType"] != "frontend" || fe["replicas"] != 1 {
				t.Errorf("Frontend: %v", fe)
			}
			gpus := 0
			for name, sub := range c.services {
				s, _ := svcs[name].(map[string]any)
				if s == nil {
					t.Fatalf("no service %s in %v", name, svcs)
				}
				if s["componentType"] != "worker" {
					t.Errorf("%s.componentType = %v", name, s["componentType"])
				}
				if got, _ := s["subComponentType"].(string); got != sub {
					t.Errorf("%s.subComponentType = %q, want %q", name, got, sub)
				}
				reps, ok := s["replicas"].(int)
				lim, _ := s["resources"].(map[string]any)["limits"].(map[string]any)
				g, err := strconv.Atoi(lim["gpu"].(string))
				if !ok || err != nil {
					t.Fatalf("%s: replicas %v gpu %v", name, s["replicas"], lim["gpu"])
				}
				gpus += reps * g
				mc := s["extraPodSpec"].(map[string]any)["mainContainer"].(map[string]any)
				if mc["image"] != ImagePlaceholder {
					t.Errorf("%s image = %v", name, mc["image"])
				}
			}
			if gpus != c.gpus {
				t.Errorf("dgd GPUs = %d, want %d", gpus, c.gpus)
			}
			var g Graph
			if err := yaml.Unmarshal(dgd, &g); err != nil {
				t.Fatal(err)
			}
			var all string
			for _, s := range g.Spec.Services {
				all += strings.Join(s.ExtraPodSpec.MainContainer.Args, " ") + "\n"
			}
			for _, want := range c.dgdArgs {
				if !strings.Contains(all, want) {
					t.Errorf("dgd args lack %q:\n%s", want, all)
				}
			}
			if c.name == "vllm agg TP2 x4 kv router" {
				want := Env{Name: "DYN_ROUTER_MODE", Value: "kv"}
				if fe := g.Spec.Services["Frontend"]; len(fe.Envs) == 0 || fe.Envs[0] != want {
					t.Errorf("frontend envs %v", fe.Envs)
				}
			}
		})
	}
}

// TestItem32_3Refuses: what neither file can express is refused by key.
func TestItem32_3Refuses(t *testing.T) {
	cases := []struct{ yaml, key string }{
		{"planner: {policy: enabled}", "planner.policy"},
		{"engine: {workers: {aggregated: {parallelism: {tensor: 16}}}}", "engine.workers.aggregated.parallelism"},
		{"engine: {workers: {aggregated: {kv_cache: {g1_backend: kvbm, tiers: {g2: {blocks: 1000}}}}}}", "engine.workers.aggregated.kv_cache.tiers.g2.blocks"},
		{"engine: {backend: trtllm, speculation: {kind: mtp, num_speculative_tokens: 1, acceptance_rates: [0.8]}}", "engine.speculation.kind"},
	}
	for _, c := range cases {
		cfg, err := config.Parse("t.yaml", []byte(c.yaml), nil)
		if err != nil {
			// each case must be a valid config that only Render refuses
			t.Fatalf("%s: the config itself is refused: %v", c.key, err)
		}
		if _, _, err := Render(&cfg); err == nil || !strings.HasPrefix(err.Error(), c.key+":") {
			t.Errorf("%s: got %v", c.key, err)
		}
	}
}
