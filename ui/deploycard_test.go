package main

import (
	"strings"
	"testing"
)

// TestItem32_7DeployCard: the Deploy card reads recommendation.json's best
// (the CLI's "Deploy:" line) and the deploy files rendered for it: the
// label, the SLA flag, figures with units, and the files or why none.
func TestItem32_7DeployCard(t *testing.T) {
	const met = `{"best": {"candidate_id": "candidate-000003", "rank": 1, "label": "aggregated 4 × h100_sxm TP2, kv_router", "meets_sla": true,
		"sla_met_fraction": 0.995, "within_budget": true, "headline": {"p99_ttft_ms": 412.5, "p99_itl_ms": 7.1, "output_throughput_tok_s": 929.4,
		"output_throughput_per_gpu_tok_s": 116.2, "gpus": 8}}}`
	const closest = `{"best": {"candidate_id": "candidate-000001", "label": "disaggregated 1 prefill + 1 decode × h100_sxm TP1, round_robin", "meets_sla": false,
		"sla_met_fraction": 0.2, "within_budget": true, "headline": {"p99_ttft_ms": 22689, "p99_itl_ms": 432.2, "gpus": 2},
		"note": "no candidate meets the SLA; this one comes closest", "warnings": ["deployment at the edge"]}}`
	const noSLA = `{"best": {"candidate_id": "candidate-000002", "label": "aggregated 1 × h100_sxm TP1, round_robin", "meets_sla": true,
		"sla_met_fraction": null, "within_budget": true, "headline": {"gpus": 1}}}`
	files := []DeployFile{
		{ID: "candidate-000003", Dir: "deploy/0001", Launch: "vllm serve", DGD: "kind: DynamoGraphDeployment"},
		{ID: "candidate-000001", Launch: "dynamo.vllm", DGD: "dgd"},
		{ID: "candidate-000002", Dir: "deploy/0002", Error: "engine.backend: cannot be deployed"},
	}
	tests := []struct {
		name, json   string
		flag, within string
		notes        int
		launch, note string
		err          string
	}{
		{"meets the SLA", met, "Meets the SLA", "99.5 % of requests", 0, "vllm serve", "deploy/0001/", ""},
		{"only the closest", closest, "Does NOT meet the SLA", "20.0 % of requests", 2, "dynamo.vllm", "Rendered for candidate-000001", ""},
		{"no SLA, no files", noSLA, "Meets the SLA", "— (no SLA)", 0, "", "No deploy files: engine.backend", ""},
		{"no best", `{"candidates": []}`, "", "", 0, "", "", "nothing to deploy"},
		{"not JSON", `{`, "", "", 0, "", "", "unexpected end"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := newDeployCard(tc.json, files)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(c.Flag, tc.flag) || len(c.Notes) != tc.notes || c.Launch != tc.launch || !strings.Contains(c.FilesNote, tc.note) {
				t.Fatalf("%+v", c)
			}
			fig := map[string]string{}
			for _, f := range c.Figures {
				fig[f.Key] = f.Value
			}
			if fig["within"] != tc.within || !strings.HasSuffix(fig["ttft"], "ms") && !strings.Contains(fig["ttft"], "ms (") || !strings.HasSuffix(fig["itl"], " ms") {
				t.Errorf("figures %v", fig)
			}
		})
	}
	c, _ := newDeployCard(met, files)
	if want := []string{"412.5 ms", "7.10 ms", "99.5 % of requests", "8", "929 tok/s (116.2 tok/s/GPU)"}; len(c.Figures) != len(want) {
		t.Fatalf("figures %v", c.Figures)
	} else {
		for i, f := range c.Figures {
			if f.Value != want[i] {
				t.Errorf("%s: %q, want %q", f.Name, f.Value, want[i])
			}
		}
	}
}
