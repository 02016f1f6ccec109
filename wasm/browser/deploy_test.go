package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/deploy"
	"github.com/dynosim/dynosim-web/core/recommend"
	"github.com/dynosim/dynosim-web/core/sim"
)

// TestItem32_7Deploys: the page's deploy files of a default-space search
// are one per recommended candidate, numbered as recommend --output-dir's
// deploy/NNNN, plus the best pick's; each is core/deploy's rendering of the
// CLI's recommendation YAML (which names the trace by absolute path: the
// same bytes), and the best's launch.sh names its tensor size.
func TestItem32_7Deploys(t *testing.T) {
	trace, err := os.ReadFile("../../cmd/dynosim/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	const base = "traffic:\n  source: {type: trace, format: mooncake, paths: [conversation_trace.jsonl], block_size: 512}\n" +
		"  load: {type: trace_timestamps, speedup: 1.0}\n  stop: {requests: 60}\n" +
		"engine: {backend: vllm, model: llama-3.1-8b, hardware: h100_sxm}\n"
	tests := []struct {
		name, tail string
		outside    bool // the best is not among the recommended
	}{
		// the closest run (most requests within the SLA) ranks below the top 1
		{"no candidate meets the SLA, top 1", "evaluation: {sla: {ttft_ms: 3000, itl_ms: 20}}\noptimization: {top_n: 1, constraints: {max_candidate_gpus: 2}}\n", true},
		{"a generous SLA, top 3", "evaluation: {sla: {ttft_ms: 1e9, itl_ms: 1e9}}\noptimization: {top_n: 3, constraints: {max_candidate_gpus: 2}}\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := recommend.Parse("recommend.yaml", []byte(base+tc.tail), nil)
			if err != nil {
				t.Fatal(err)
			}
			p, err := sim.PrepareSweep(sim.Inputs{Config: sp.Base, ConfigName: "recommend.yaml", Trace: trace, TraceName: "conversation_trace.jsonl"})
			if err != nil {
				t.Fatal(err)
			}
			l, err := recommend.Search(sp, p, recommend.Local{P: p}, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			ds, err := recommendDeploys(sp, l)
			if err != nil {
				t.Fatal(err)
			}
			rec := l.Recommended()
			if l.Pick == nil || len(ds) != len(rec)+map[bool]int{true: 1}[tc.outside] {
				t.Fatalf("%d deploys for %d recommended, best %v", len(ds), len(rec), l.Pick)
			}
			abs, _ := filepath.Abs("conversation_trace.jsonl")
			var best *deployFiles
			for i, d := range ds {
				if d.Error != "" {
					t.Fatalf("%s: %s", d.ID, d.Error)
				}
				if d.ID == l.Pick.ID {
					best = &ds[i]
				}
				if i >= len(rec) {
					if d.Dir != "" {
						t.Errorf("the best outside the view has dir %q", d.Dir)
					}
					continue
				}
				// the CLI's bytes: its YAML names the trace by absolute path
				y, err := sp.RecommendationYAML(l, i, rec[i], []string{"traffic.source.paths=[" + abs + "]"})
				if err != nil {
					t.Fatal(err)
				}
				cfg, err := config.Parse(filepath.Join("out", "recommendations", d.Dir+".yaml"), y, nil)
				if err != nil {
					t.Fatal(err)
				}
				launch, dgd, err := deploy.Render(&cfg)
				if err != nil {
					t.Fatal(err)
				}
				if d.Dir != fmt.Sprintf("deploy/%04d", i+1) || d.ID != rec[i].ID || d.Launch != string(launch) || d.DGD != string(dgd) {
					t.Errorf("%d: %s in %s differs from the CLI's", i, d.ID, d.Dir)
				}
			}
			if best == nil {
				t.Fatalf("no files for the best %s", l.Pick.ID)
			}
			var tp string
			for _, e := range l.Candidates {
				if e.ID == l.Pick.ID {
					for _, s := range e.Sets {
						if v, ok := strings.CutPrefix(s, "engine.workers.aggregated.parallelism.tensor="); ok {
							tp = v
						}
						if v, ok := strings.CutPrefix(s, "engine.workers.prefill.parallelism.tensor="); ok {
							tp = v
						}
					}
				}
			}
			if !regexp.MustCompile(`--tensor-parallel-size `+tp+`\b`).MatchString(best.Launch) || !strings.Contains(best.DGD, "kind: DynamoGraphDeployment") {
				t.Errorf("best %s (TP%s): launch.sh\n%s", l.Pick.Label, tp, best.Launch)
			}
		})
	}
}
