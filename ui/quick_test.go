package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/timing"
)

// TestItem32_6CatalogMatchesTiming: the form's choices are the core's
// catalogs.
func TestItem32_6CatalogMatchesTiming(t *testing.T) {
	if m, g := timing.ModelNames(), timing.GPUNames(); !slices.Equal(m, catalogModels) || !slices.Equal(g, catalogGPUs) {
		t.Errorf("ui/catalog.go is stale; paste:\n\tcatalogModels = %#v\n\tcatalogGPUs   = %#v", m, g)
	}
}

// TestItem32_6DefaultsMatchConfig: a key the YAML leaves out shows
// core/config's default.
func TestItem32_6DefaultsMatchConfig(t *testing.T) {
	d, q := config.Default(), quickDefaults()
	in, _, _ := tokenField(&q.Traffic.Source.InputTokens)
	out, _, _ := tokenField(&q.Traffic.Source.OutputTokens)
	qr := func(r quickRole) string { return fmt.Sprint(r.Parallelism.Replicas, "×TP", r.Parallelism.Tensor) }
	got := fmt.Sprint(q.Traffic.Source.Type, in, out, q.Traffic.Load.Concurrency, q.Engine.Mode, q.Engine.Model, q.Engine.Hardware,
		qr(q.Engine.Workers.Aggregated), qr(q.Engine.Workers.Prefill), qr(q.Engine.Workers.Decode), q.Router.Policy)
	r := func(p config.Parallelism) string { return fmt.Sprint(p.Replicas, "×TP", p.Tensor) }
	want := fmt.Sprint(d.Traffic.Source.Type, float64(d.Traffic.Source.InputTokens.N), float64(d.Traffic.Source.OutputTokens.N), d.Traffic.Load.Concurrency,
		d.Engine.Mode, d.Engine.Model, d.Engine.Hardware, r(d.Engine.Workers.Aggregated.Parallelism), r(d.Engine.Workers.Prefill.Parallelism),
		r(d.Engine.Workers.Decode.Parallelism), d.Router.Policy)
	if got != want {
		t.Errorf("form defaults %s, config defaults %s", got, want)
	}
}

// quickSynthetic is a synthetic config with comments and other keys the
// form must keep.
const quickSynthetic = `# my config
traffic:
  source: {type: synthetic, input_tokens: 512, output_tokens: 64}  # short prompts
  load: {type: poisson, requests_per_second: 4, seed: 9}
engine:
  model: llama-3.1-8b
  hardware: h100_sxm   # the lab's GPU
  workers:
    aggregated:
      parallelism: {replicas: 2, tensor: 1}
      scheduler: {max_batched_tokens: 4096}
router: {policy: round_robin}
evaluation: {sla: {ttft_ms: 500, itl_ms: 50}}
`

// TestItem32_6QuickRoundTrip: each field's edit lands in the YAML (which
// stays a valid config, keeping its comments and other keys), and the
// form reads it back.
func TestItem32_6QuickRoundTrip(t *testing.T) {
	disagg := strings.NewReplacer("engine:\n", "engine:\n  mode: disaggregated\n",
		"    aggregated:\n      parallelism: {replicas: 2, tensor: 1}\n      scheduler: {max_batched_tokens: 4096}\n",
		"    prefill: {parallelism: {replicas: 1}}\n    decode: {parallelism: {replicas: 3}}\n").Replace(quickSynthetic)
	tests := []struct {
		name, yaml, key, value string
		trace                  bool
		want                   []string // lines (or parts of lines) the YAML must hold
		inPlace                bool     // only the edited line changed
		back                   string   // the field's value read back (default: value)
	}{
		{"model", quickSynthetic, "model", "qwen3-32b", false, []string{"  model: qwen3-32b"}, true, ""},
		{"gpu keeps its comment", quickSynthetic, "gpu", "b200", false, []string{"  hardware: b200   # the lab's GPU"}, true, ""},
		{"tensor", quickSynthetic, "tensor", "4", false, []string{"parallelism: {replicas: 2, tensor: 4}"}, true, ""},
		{"replicas", quickSynthetic, "replicas", "8", false, []string{"parallelism: {replicas: 8, tensor: 1}"}, true, ""},
		{"router", quickSynthetic, "router", "kv_router", false, []string{"router: {policy: kv_router}"}, true, ""},
		{"isl", quickSynthetic, "isl", "2048", false, []string{"input_tokens: 2048, output_tokens: 64}  # short prompts"}, true, ""},
		{"osl 0", quickSynthetic, "osl", "0", false, []string{"output_tokens: 0}"}, true, ""},
		{"rate", quickSynthetic, "rate", "12.5", false, []string{"requests_per_second: 12.5, seed: 9}"}, true, ""},
		{"sla ttft", quickSynthetic, "sla-ttft", "1000", false, []string{"ttft_ms: 1000, itl_ms: 50"}, true, ""},
		{"sla itl cleared", quickSynthetic, "sla-itl", "", false, []string{"evaluation: {sla: {ttft_ms: 500}}", "# short prompts"}, false, ""},
		{"missing key added", "engine: {model: llama-3.1-8b}\n", "replicas", "3", false,
			[]string{"engine: {model: llama-3.1-8b, workers: {aggregated: {parallelism: {replicas: 3}}}}"}, false, ""},
		{"empty config", "", "sla-itl", "25", false, []string{"evaluation:\n  sla:\n    itl_ms: 25"}, false, ""},
		{"disagg prefill", disagg, "prefill-replicas", "2", false, []string{"prefill: {parallelism: {replicas: 2}}"}, true, ""},
		{"disagg decode", disagg, "decode-replicas", "6", false, []string{"decode: {parallelism: {replicas: 6}}"}, true, ""},
		{"disagg tensor sets both", disagg, "tensor", "2", false,
			[]string{"prefill: {parallelism: {replicas: 1, tensor: 2}}", "decode: {parallelism: {replicas: 3, tensor: 2}}"}, false, ""},
		{"normal keeps stddev", strings.Replace(quickSynthetic, "input_tokens: 512", "input_tokens: {mean: 512, stddev: 32}", 1), "isl", "700", false,
			[]string{"input_tokens: {mean: 700, stddev: 32}"}, true, ""},
		{"concurrency", strings.Replace(quickSynthetic, "type: poisson, requests_per_second: 4", "type: concurrency, concurrency: 4", 1), "rate", "16", false,
			[]string{"{type: concurrency, concurrency: 16, seed: 9}"}, true, ""},
		{"constant interval replaced", strings.Replace(quickSynthetic, "type: poisson, requests_per_second: 4", "type: constant_rate, interval_ms: 250", 1), "rate", "8", false,
			[]string{"load: {type: constant_rate, seed: 9, requests_per_second: 8}", "# the lab's GPU"}, false, ""},
		{"trace becomes synthetic", defaultYAML, "isl", "1500", true,
			[]string{"source: {type: synthetic, format: mooncake, paths: [conversation_trace.jsonl], block_size: 512, input_tokens: 1500}",
				"load: {type: poisson, speedup: 1.0, requests_per_second: 10}", "# DynoSim config"}, false, ""},
		{"selected trace, synthetic YAML", quickSynthetic, "osl", "300", true, []string{"output_tokens: 300}"}, true, ""},
		{"HF path model kept as an option", "engine: {model: ./my/config.json}\n", "tensor", "2", false, []string{"model: ./my/config.json"}, false, "2"},
	}
	for _, tc := range tests {
		res, err := ApplyQuick(tc.yaml, tc.key, tc.value, tc.trace)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(res.YAML, w) {
				t.Errorf("%s: YAML lacks %q:\n%s", tc.name, w, res.YAML)
			}
		}
		if _, err := config.Parse("c.yaml", []byte(res.YAML), nil); err != nil {
			t.Errorf("%s: the edited YAML is refused: %v\n%s", tc.name, err, res.YAML)
		}
		if tc.inPlace {
			a, b := strings.Split(tc.yaml, "\n"), strings.Split(res.YAML, "\n")
			diff := 0
			for i := range min(len(a), len(b)) {
				if a[i] != b[i] {
					diff++
				}
			}
			if len(a) != len(b) || diff != 1 {
				t.Errorf("%s: %d lines changed (and %d → %d lines), want one:\n%s", tc.name, diff, len(a), len(b), res.YAML)
			}
		}
		if strings.Contains(tc.yaml, "# ") {
			for _, c := range []string{"# my config", "# short prompts", "# the lab's GPU", "# DynoSim config"} {
				if strings.Contains(tc.yaml, c) && !strings.Contains(res.YAML, c) {
					t.Errorf("%s: lost the comment %q", tc.name, c)
				}
			}
		}
		if res.ToSynthetic != tc.trace {
			t.Errorf("%s: ToSynthetic %v", tc.name, res.ToSynthetic)
		}
		f := ReadQuick(res.YAML, tc.trace && !res.ToSynthetic)
		want := tc.back
		if want == "" {
			want = tc.value
		}
		if got := f.Field(tc.key).Value; got != want || f.Field(tc.key).Disabled {
			t.Errorf("%s: reads back %q (disabled %v), want %q", tc.name, got, f.Field(tc.key).Disabled, want)
		}
	}
}

// TestItem32_6QuickRead: the form shows the config's values or the
// defaults, and disables (with a reason) what it cannot express.
func TestItem32_6QuickRead(t *testing.T) {
	type shown struct{ key, value, title string } // title: part of it; "-" disabled
	tests := []struct {
		name, yaml string
		trace      bool
		want       []shown
	}{
		{"defaults", "{}", false, []shown{{"model", "llama-3.1-8b", ""}, {"gpu", "h100_sxm", ""}, {"tensor", "1", ""}, {"replicas", "1", ""},
			{"router", "round_robin", ""}, {"isl", "1024", ""}, {"osl", "128", ""}, {"rate", "10", "concurrency"}, {"sla-ttft", "", ""}, {"sla-itl", "", ""}}},
		{"page default", defaultYAML, true, []shown{{"replicas", "8", ""}, {"isl", "", "The trace sets"}, {"rate", "", "-"}, {"sla-ttft", "500", ""}, {"sla-itl", "50", ""}}},
		{"trace with concurrency", "traffic: {source: {type: trace}, load: {type: concurrency, concurrency: 7}}", true, []shown{{"rate", "7", "concurrency"}}},
		{"normal", "traffic: {source: {input_tokens: {mean: 300.5, stddev: 9}}}", false, []shown{{"isl", "300.5", "its mean"}}},
		{"uniform", "traffic: {source: {output_tokens: {min: 10, max: 20}}}", false, []shown{{"osl", "15", "-"}}},
		{"disagg unequal tensor", "engine: {mode: disaggregated, workers: {prefill: {parallelism: {tensor: 2}}, decode: {parallelism: {replicas: 4}}}}", false,
			[]shown{{"tensor", "", "-"}, {"prefill-replicas", "1", ""}, {"decode-replicas", "4", ""}}},
		{"e2e sla", "evaluation: {sla: {e2e_ms: 9000}}", false, []shown{{"sla-ttft", "", "-"}, {"sla-itl", "", "-"}}},
		{"constant interval", "traffic: {load: {type: constant_rate, interval_ms: 200}}", false, []shown{{"rate", "5", "interval_ms"}}},
		{"wrong kind keeps default", "engine: {workers: {aggregated: {parallelism: {replicas: many}}}}", false, []shown{{"replicas", "1", ""}}},
		{"unparsable", "engine: {model: [", false, []shown{{"model", "", "-"}, {"isl", "", "-"}}},
	}
	for _, tc := range tests {
		f := ReadQuick(tc.yaml, tc.trace)
		for _, w := range tc.want {
			fl := f.Field(w.key)
			if fl.Value != w.value || (w.title == "-") != fl.Disabled || w.title != "-" && !strings.Contains(strings.ToLower(fl.Title), strings.ToLower(w.title)) {
				t.Errorf("%s: %s = %+v, want %q (%q)", tc.name, w.key, *fl, w.value, w.title)
			}
			if fl.Disabled && fl.Title == "" {
				t.Errorf("%s: %s disabled without a reason", tc.name, w.key)
			}
		}
	}
	if f := ReadQuick("engine: {model: ./m.json, hardware: tpu}", false); !slices.Contains(f.Models, "./m.json") || !slices.Contains(f.GPUs, "tpu") || len(catalogModels) == len(f.Models) && catalogModels[0] != f.Models[0] {
		t.Errorf("a config's own model and GPU are not offered: %v %v", f.Models, f.GPUs)
	}
}

// TestItem32_6QuickRefusals: a value the config cannot take is refused
// with a message naming the key, and the YAML is left as it was.
func TestItem32_6QuickRefusals(t *testing.T) {
	for _, tc := range []struct{ name, yaml, key, value, want string }{
		{"replicas 0", quickSynthetic, "replicas", "0", "replicas: want a whole number ≥ 1"},
		{"isl 0", quickSynthetic, "isl", "0", "traffic.source.input_tokens: want a whole number of tokens ≥ 1"},
		{"osl text", quickSynthetic, "osl", "many", "traffic.source.output_tokens"},
		{"rate 0", quickSynthetic, "rate", "0", "traffic.load.requests_per_second"},
		{"rate on timestamps", defaultYAML, "rate", "5", "Arrivals follow the trace's timestamps"},
		{"uniform isl", "traffic: {source: {input_tokens: {min: 1, max: 9}}}", "isl", "5", "is uniform"},
		{"sla negative", quickSynthetic, "sla-ttft", "-4", "evaluation.sla.ttft_ms"},
		{"broken YAML", "engine: [", "model", "b200", "the YAML does not parse"},
		{"not a mapping", "engine: 5\n", "model", "qwen3-32b", "engine is not a mapping"},
		{"alias", "x: &w {aggregated: {parallelism: {replicas: 1}}}\nengine: {workers: *w}\n", "replicas", "2", "engine.workers is an alias"},
	} {
		if _, err := ApplyQuick(tc.yaml, tc.key, tc.value, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}
