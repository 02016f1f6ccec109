package main

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/recommend"
)

// Every recommend preset parses as `dynosim recommend -c` reads it, on the
// sample trace the page names, and stays small enough for a page search.
func TestRecPresetsParse(t *testing.T) {
	if len(RecPresets) < 3 {
		t.Fatalf("%d recommend presets", len(RecPresets))
	}
	for _, p := range RecPresets {
		sp, err := recommend.Parse("recommend.yaml", []byte(p.YAML), nil)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if sp.Size() < 2 || sp.Size() > 12 {
			t.Errorf("%s: %d candidates", p.Name, sp.Size())
		}
		if !strings.Contains(string(sp.Base), "paths: [conversation_trace.jsonl]") || !strings.Contains(string(sp.Base), "requests: 200") {
			t.Errorf("%s: base\n%s", p.Name, sp.Base)
		}
	}
}

// TestItem32_7SearchDeployments: "Search deployments for this workload"
// turns each predict preset (and a wider deployment) into a recommend
// config that parses as `dynosim recommend -c` reads it, has no domain (so
// the default space is searched: one dimension, recommend.DefaultPath),
// keeps the model, GPU, SLA and traffic, budgets max(8, the deployment's
// GPUs), and whose every candidate is a valid predict config.
func TestItem32_7SearchDeployments(t *testing.T) {
	wide := strings.Replace(defaultYAML, "parallelism: {replicas: 8, tensor: 1, attention_data: 1}", "parallelism: {replicas: 3, tensor: 4}", 1)
	cases := []struct {
		name, predict string
		budget        int
		err           string
	}{
		{"default", presetYAML("8-workers"), 8, ""},
		{"1-worker", presetYAML("1-worker"), 8, ""},
		{"long-context", presetYAML("long-context"), 8, ""},
		{"disaggregated", presetYAML("disaggregated"), 8, ""},
		{"planner", presetYAML("planner"), 8, ""},
		{"12 GPUs", wide, 12, ""},
		{"not YAML", "engine: [", 0, "does not parse"},
		{"no engine", "traffic: {}\n", 0, "no engine"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			y, budget, err := deploymentSearchYAML(tc.predict)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if budget != tc.budget || !strings.Contains(y, fmt.Sprintf("max_candidate_gpus: %d", tc.budget)) {
				t.Errorf("budget %d, want %d\n%s", budget, tc.budget, y)
			}
			if strings.Contains(y, "choices") || strings.Contains(y, "range:") {
				t.Errorf("a domain in\n%s", y)
			}
			sp, err := recommend.Parse("recommend.yaml", []byte(y), nil)
			if err != nil {
				t.Fatalf("%v\n%s", err, y)
			}
			if len(sp.Dims) != 1 || sp.Dims[0].Path != recommend.DefaultPath || sp.Size() < 12 {
				t.Fatalf("not the default space: %d dims, %d candidates\n%s", len(sp.Dims), sp.Size(), y)
			}
			base, err := config.Parse("base.yaml", sp.Base, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := config.Parse("predict.yaml", []byte(tc.predict), nil)
			if base.Engine.Model != want.Engine.Model || base.Engine.Hardware != want.Engine.Hardware ||
				base.Evaluation.SLA != want.Evaluation.SLA || !reflect.DeepEqual(base.Traffic, want.Traffic) {
				t.Errorf("model, GPU, SLA or traffic changed\n%s", y)
			}
			if tc.name == "12 GPUs" && recommend.GPUs(&want) != 12 {
				t.Errorf("the wide deployment has %d GPUs", recommend.GPUs(&want))
			}
			for i := range sp.Size() {
				c, err := sp.YAML(sp.Sets(sp.At(i)))
				if err == nil {
					_, err = config.Parse("candidate.yaml", c, nil)
				}
				if err != nil {
					t.Errorf("candidate %d (%s): %v", i, sp.Dims[0].Values[i], err)
				}
			}
		})
	}
}
