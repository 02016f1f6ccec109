package recommend

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/sim"
)

// mustShow is issue 32 item 1's config: a model, a GPU, an SLA, a GPU
// budget and a workload, no domain.
const mustShow = `
traffic:
  source: {type: trace, format: mooncake}
  load: {type: trace_timestamps}
  stop: {requests: 1000}
engine: {model: Llama-3.1-8B, hardware: h100_sxm}
evaluation: {sla: {ttft_ms: 1000, itl_ms: 25}}
optimization: {constraints: {max_candidate_gpus: 8}}
`

// Issue 32 item 1: a config with no domain searches a default space of
// deployments (default_space.go) — both modes, the tensor sizes that fit,
// replicas and prefill/decode splits within the budget, the router and
// max_batched_tokens where they can matter, each effective config once —
// while a config with a domain, or one that pins its deployment, is
// searched as before.
func TestItem32_1DefaultSpace(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		sets    []string
		min     int      // candidates at least (0: the default space is off)
		tensors []string // TP sizes the space must have, exactly
		gpus    int      // budget
		size    int      // with the default off: the space's size
	}{
		{"must-show: Llama-3.1-8B on H100, 8 GPUs", mustShow, nil, 12, []string{"TP1", "TP2"}, 8, 0},
		{"a model that needs 2 GPUs: TP2 and TP4", mustShow, []string{"engine.model=llama-3.1-70b"}, 12, []string{"TP2", "TP4"}, 8, 0},
		{"a list of GPUs", mustShow, []string{"engine.hardware={choices: [h100_sxm, a100_80gb]}"}, 24, []string{"TP1", "TP2"}, 8, 0},
		{"budget of 1 GPU: aggregated only", mustShow, []string{"optimization.constraints.max_candidate_gpus=1"}, 0, nil, 1, 2},
		{"an explicit domain overrides", mustShow, []string{"engine.workers.aggregated.parallelism.replicas={choices: [1, 2, 4]}"}, 0, nil, 8, 3},
		{"a pinned deployment is one candidate", mustShow, []string{"engine.workers.aggregated.parallelism.replicas=8"}, 0, nil, 8, 1},
		{"a pinned router is one candidate", mustShow, []string{"router.policy=kv_router"}, 0, nil, 8, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := Parse("r.yaml", []byte(tc.yaml), tc.sets)
			if err != nil {
				t.Fatal(err)
			}
			if tc.min == 0 {
				if tc.size != 0 && sp.Size() != tc.size {
					t.Fatalf("size %d, want %d (dims %+v)", sp.Size(), tc.size, sp.Dims)
				}
				if tc.size > 1 && tc.gpus > 1 && sp.Deployments != nil {
					t.Fatalf("default space despite the domain: %+v", sp.Dims)
				}
				return
			}
			if len(sp.Dims) != 1 || sp.Dims[0].Path != DefaultPath || sp.Size() < tc.min {
				t.Fatalf("dims %+v", sp.Dims)
			}
			modes, tps := map[string]bool{}, map[string]bool{}
			seen := map[string]string{}
			for i := range sp.Size() {
				sets := sp.Sets(sp.At(i))
				cfg, err := config.Parse("r.yaml", sp.Base, sets)
				if err != nil {
					t.Fatalf("%v: %v", sets, err)
				}
				if g := GPUs(&cfg); g > tc.gpus {
					t.Fatalf("%v: %d GPUs over the budget %d", sets, g, tc.gpus)
				}
				label := Label(&cfg)
				modes[strings.Fields(label)[0]] = true
				for _, f := range strings.Fields(strings.ReplaceAll(label, ",", " ")) {
					if strings.HasPrefix(f, "TP") {
						tps[f] = true
					}
				}
				// Folding: knobs that cannot matter take their default,
				// and no two candidates share an effective config.
				if cfg.Router.Policy == "round_robin" && cfg.Router.PrefillLoadScale != 1 {
					t.Fatalf("%v: round_robin with prefill_load_scale %v", sets, cfg.Router.PrefillLoadScale)
				}
				if cfg.Engine.Mode == "disaggregated" {
					cfg.Engine.Workers.Aggregated = config.Default().Engine.Workers.Aggregated
				} else {
					cfg.Engine.Workers.Prefill, cfg.Engine.Workers.Decode = config.Default().Engine.Workers.Prefill, config.Default().Engine.Workers.Decode
				}
				b, _ := json.Marshal(cfg)
				if prev, ok := seen[string(b)]; ok {
					t.Fatalf("%q and %q are the same config", prev, sp.Dims[0].Values[i])
				}
				seen[string(b)] = sp.Dims[0].Values[i]
			}
			if !modes["aggregated"] || !modes["disaggregated"] {
				t.Fatalf("modes %v", modes)
			}
			var got []string
			for tp := range tps {
				got = append(got, tp)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.tensors) {
				t.Fatalf("tensor sizes %v, want %v", got, tc.tensors)
			}
		})
	}
}

// The must-show search itself, on the first requests of the public
// Mooncake conversation trace (1,000 without -short, as the issue asks;
// 200 with it): every candidate runs and the best has a label.
func TestItem32_1DefaultSearch(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "traces", "mooncake", "conversation_trace.jsonl"))
	if err != nil {
		t.Skipf("public trace not available: %v", err)
	}
	var sets []string
	if testing.Short() {
		sets = []string{"traffic.stop.requests=200"}
	}
	sp, err := Parse("r.yaml", []byte(mustShow), sets)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.PrepareSweep(sim.Inputs{Config: sp.Base, Trace: data, TraceName: "conversation_trace.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Search(sp, p, Local{p}, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Counts.Evaluated < 12 || l.Counts.Feasible < 12 || l.Pick == nil || l.Pick.Label == "" {
		t.Fatalf("counts %+v, best %+v", l.Counts, l.Pick)
	}
	t.Logf("%d candidates; best %s (meets SLA %v)", l.Counts.Evaluated, l.Pick.Label, l.Pick.MeetsSLA)
}
