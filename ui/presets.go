package main

import "strings"

// Preset is a named starting config for the YAML editor.
type Preset struct {
	Name, Label, YAML string
}

// defaultYAML is the editor's starting config: 8 round-robin vLLM workers
// on the sample trace (the page passes the trace bytes, which replace
// traffic.source.paths).
const defaultYAML = `# DynoSim config (the same YAML as dynosim predict -c). The trace you drop or
# pick below replaces traffic.source.paths.
traffic:
  source: {type: trace, format: mooncake, paths: [conversation_trace.jsonl], block_size: 512}
  load: {type: trace_timestamps, speedup: 1.0}
engine:
  mode: aggregated
  backend: vllm
  model: llama-3.1-8b
  hardware: h100_sxm
  workers:
    aggregated:
      parallelism: {replicas: 8, tensor: 1, attention_data: 1}
      scheduler: {max_batched_tokens: 8192, max_sequences: 256, preemption: lifo, chunked_prefill: true}
      kv_cache: {block_size: 64, prefix_caching: true, g1_backend: native, capacity: {type: fixed, blocks: 16384}}
      timing: {type: polynomial, speedup: 1.0, decode_speedup: 1.0}
router: {policy: round_robin}
evaluation: {sla: {ttft_ms: 500, itl_ms: 50}}
execution: {seed: 42}
`

// Presets are offered beside the editor. The first is the default.
var Presets = []Preset{
	{"8-workers", "8 workers (round-robin)", defaultYAML},
	{"1-worker", "1 worker", strings.Replace(defaultYAML, "replicas: 8", "replicas: 1", 1)},
	{"long-context", "Long context (8 workers, bigger batches and KV)", strings.NewReplacer(
		"max_batched_tokens: 8192", "max_batched_tokens: 32768",
		"blocks: 16384", "blocks: 65536",
	).Replace(defaultYAML)},
}

// presetYAML returns the YAML of the named preset, or "" if unknown.
func presetYAML(name string) string {
	for _, p := range Presets {
		if p.Name == name {
			return p.YAML
		}
	}
	return ""
}
