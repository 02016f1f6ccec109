package main

import (
	"strings"

	"github.com/dynosim/dynosim-web/internal/defaultconfig"
)

// Preset is a named starting config for the YAML editor.
type Preset struct {
	Name, Label, YAML string
}

// defaultYAML is the editor's starting config: the CLI's default (8
// round-robin vLLM workers) under a header for the page, naming the sample
// trace (the page passes the trace bytes, which replace traffic.source.paths).
var defaultYAML = "# DynoSim config (the same YAML as dynosim predict -c). The trace you drop or\n" +
	"# pick below replaces traffic.source.paths.\n" +
	strings.Replace(strings.TrimLeft(withoutComments(defaultconfig.YAML), "\n"), "paths: [sample.jsonl]", "paths: [conversation_trace.jsonl]", 1)

// withoutComments drops the leading comment lines of a YAML text.
func withoutComments(y string) string {
	for strings.HasPrefix(y, "#") {
		_, y, _ = strings.Cut(y, "\n")
	}
	return y
}

// Presets are offered beside the editor. The first is the default.
var Presets = []Preset{
	{"8-workers", "8 workers (round-robin)", defaultYAML},
	{"1-worker", "1 worker", strings.Replace(defaultYAML, "replicas: 8", "replicas: 1", 1)},
	{"long-context", "Long context (8 H200 workers: bigger batches and KV)", strings.NewReplacer(
		"max_batched_tokens: 8192", "max_batched_tokens: 32768",
		"hardware: h100_sxm", "hardware: h200_sxm",
	).Replace(defaultYAML)},
	{"disaggregated", "Disaggregated (2 prefill + 2 decode)", disaggregatedYAML(defaultYAML)},
	{"planner", "Planner (load-based, 5 s; from 2 workers)", plannerYAML(defaultYAML, "load_180_5")},
	{"planner-hybrid", "Planner (throughput 180 s + load 5 s; from 2 workers)", plannerYAML(defaultYAML, "hybrid_180_5")},
}

// plannerYAML puts the scaling planner in the loop of the default config
// with the named scaling_policy preset. It starts from 2 workers, which the
// sample's load overwhelms, and scales against the default's SLA
// (evaluation.sla: TTFT 500 ms, ITL 50 ms) between 1 worker and the
// planner's 8-GPU ceiling (max_num_gpus).
func plannerYAML(y, policy string) string {
	if !strings.Contains(y, "\nevaluation: {sla: {") || !strings.Contains(y, "replicas: 8") {
		return ""
	}
	return strings.NewReplacer("replicas: 8", "replicas: 2",
		"\nevaluation:", "\nplanner: {policy: enabled, scaling_policy: "+policy+"}\nevaluation:").Replace(y)
}

// disaggregatedYAML turns the default config into disaggregated serving: 2
// prefill and 2 decode workers with a bootstrap KV handoff at 50 GB/s. The
// aggregated pool must not appear beside them, so its block is replaced.
func disaggregatedYAML(y string) string {
	head, rest, ok := strings.Cut(y, "  workers:\n")
	_, tail, ok2 := strings.Cut(rest, "\nrouter:")
	if !ok || !ok2 {
		return ""
	}
	head = strings.Replace(head, "mode: aggregated\n", "mode: disaggregated\n"+
		"  kv_transfer: {handoff: bootstrap, bandwidth_gb_per_second: 50, timing_mode: destination_missing}\n", 1)
	return head + "  workers:\n" +
		"    prefill: {parallelism: {replicas: 2}, scheduler: {max_sequences: 8}}\n" +
		"    decode: {parallelism: {replicas: 2}}\n" +
		"router:" + tail
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
