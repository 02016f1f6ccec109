package main

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"
)

// minSearchGPUs is the smallest GPU budget "Search deployments for this
// workload" gives: the must-show search of issue 32 (8 GPUs, an HGX node).
const minSearchGPUs = 8

// deploymentSearchYAML turns the predict view's config into a recommend
// config that searches the default space (core/recommend/default_space.go,
// issue 32 item 7): the same model, backend, GPU, SLA, workload and
// traffic, no domains, and a budget of max(8, the GPUs the config
// deploys). Everything the default space searches (engine.mode, the pools'
// parallelism and batching, the router) is left out: a config that pins
// any of them is one candidate, not a search. It also returns the budget.
func deploymentSearchYAML(predict string) (string, int, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(predict), &doc); err != nil {
		return "", 0, fmt.Errorf("the predict config does not parse: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return "", 0, errors.New("the predict config is not a YAML mapping")
	}
	root := doc.Content[0]
	engine := yamlValue(root, "engine")
	if engine == nil || engine.Kind != yaml.MappingNode {
		return "", 0, errors.New("the predict config has no engine section")
	}
	budget := max(minSearchGPUs, deployedGPUs(engine))

	out := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, v *yaml.Node) {
		if v != nil {
			out.Content = append(out.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
		}
	}
	add("traffic", yamlValue(root, "traffic"))
	// The engine without what a candidate sets (mode, workers) and the
	// disaggregated handoff's model (kv_transfer), which the default
	// space leaves at its default for its disaggregated candidates.
	eng := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(engine.Content); i += 2 {
		switch engine.Content[i].Value {
		case "mode", "workers", "kv_transfer":
		default:
			eng.Content = append(eng.Content, engine.Content[i], engine.Content[i+1])
		}
	}
	add("engine", eng)
	if sla := yamlValue(yamlValue(root, "evaluation"), "sla"); sla != nil {
		add("evaluation", yamlMap("sla", sla))
	}
	add("execution", yamlValue(root, "execution"))
	b := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(budget)}
	opt := yamlMap("constraints", yamlMap("max_candidate_gpus", b))
	opt.Style, opt.Content[1].Style = yaml.FlowStyle, yaml.FlowStyle
	add("optimization", opt)

	var buf bytes.Buffer
	buf.WriteString("# dynosim recommend: the default deployment space (no domains) for the predict\n" +
		"# config's model, GPU, SLA and workload, within " + strconv.Itoa(budget) + " GPUs.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(out); err != nil {
		return "", 0, err
	}
	return buf.String(), budget, enc.Close()
}

// deployedGPUs counts the GPUs the engine section deploys: replicas ×
// tensor × pipeline × attention_data of the aggregated pool, or the sum of
// the prefill and decode pools' (recommend.GPUs on the parsed config).
// Absent keys count 1, the config's defaults.
func deployedGPUs(engine *yaml.Node) int {
	roles := []string{"aggregated"}
	if m := yamlValue(engine, "mode"); m != nil && m.Value == "disaggregated" {
		roles = []string{"prefill", "decode"}
	}
	n := 0
	for _, r := range roles {
		p := yamlValue(yamlValue(yamlValue(engine, "workers"), r), "parallelism")
		g := 1
		for _, k := range []string{"replicas", "tensor", "pipeline", "attention_data"} {
			if v := yamlValue(p, k); v != nil {
				if x, err := strconv.Atoi(v.Value); err == nil && x > 0 {
					g *= x
				}
			}
		}
		n += g
	}
	return n
}

// yamlValue is the value of key in the mapping n (nil if absent).
func yamlValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// yamlMap is the one-key mapping {key: v}.
func yamlMap(key string, v *yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: key}, v}}
}
