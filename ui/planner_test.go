package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// plannerJSON is a load-based run: 8 workers scaled down twice, then up
// twice to the ceiling, where the planner holds (a tick that changes
// nothing is no decision). Workers become ready or finish draining
// between ticks.
const plannerJSON = `{"summary": {"num_requests": 1000, "duration_ms": 40000, "gpu_hours": 0.0801, "mean_gpus": 7.209, "total_gpus": 8},
"sla": {"ttft_ms": 500, "itl_ms": 50, "e2e_ms": null},
"deployment": {"mode": "aggregated", "pools": [{"name": "aggregated", "hardware": "h100_sxm", "replicas": 8, "gpus_per_worker": 1, "timing": "default"}]},
"planner": {
  "ticks": [
    {"tick": 0, "t_ms": 5000, "reason": "load: … aggregated -1", "pools": [{"pool": "aggregated", "target": 7, "active": 7, "starting": 0, "draining": 1, "floor": 0}], "est_ttft_ms": 285, "observed_ttft_ms": 301, "observed_requests": null},
    {"tick": 1, "t_ms": 10000, "reason": "load: … aggregated -1", "pools": [{"pool": "aggregated", "target": 6, "active": 6, "starting": 0, "draining": 1, "floor": 0}]},
    {"tick": 2, "t_ms": 15000, "reason": "load: est TTFT 534 ms > 500 ms SLA: aggregated +1", "pools": [{"pool": "aggregated", "target": 7, "active": 6, "starting": 1, "draining": 0, "floor": 0}]},
    {"tick": 3, "t_ms": 20000, "reason": "load: … aggregated +1", "pools": [{"pool": "aggregated", "target": 8, "active": 7, "starting": 1, "draining": 0, "floor": 0}]},
    {"tick": 4, "t_ms": 25000, "reason": "load: … hold at the 8-GPU ceiling", "pools": [{"pool": "aggregated", "target": 8, "active": 8, "starting": 0, "draining": 0, "floor": 0}]}
  ],
  "workers": [
    {"t_ms": 0, "pool": "aggregated", "active": 8, "starting": 0, "draining": 0},
    {"t_ms": 5000, "pool": "aggregated", "active": 7, "starting": 0, "draining": 1},
    {"t_ms": 9807.7, "pool": "aggregated", "active": 7, "starting": 0, "draining": 0},
    {"t_ms": 10000, "pool": "aggregated", "active": 6, "starting": 0, "draining": 1},
    {"t_ms": 13186.4, "pool": "aggregated", "active": 6, "starting": 0, "draining": 0},
    {"t_ms": 15000, "pool": "aggregated", "active": 6, "starting": 1, "draining": 0},
    {"t_ms": 16000, "pool": "aggregated", "active": 7, "starting": 0, "draining": 0},
    {"t_ms": 20000, "pool": "aggregated", "active": 7, "starting": 1, "draining": 0},
    {"t_ms": 21000, "pool": "aggregated", "active": 8, "starting": 0, "draining": 0}
  ],
  "gpu_hours": 0.0801, "mean_gpus": 7.209
}}`

func TestPlannerView(t *testing.T) {
	p, err := parseReport([]byte(plannerJSON))
	if err != nil {
		t.Fatal(err)
	}
	v := plannerView(p.Planner)
	if v == nil || v.Ticks != 5 || v.GPUHours != 0.0801 || v.MeanGPUs != 7.209 {
		t.Fatalf("view = %+v", v)
	}
	var got []string
	for _, d := range v.Decisions {
		got = append(got, d.Time()+" "+d.Pool+" "+d.Change())
	}
	want := []string{"5.0 s aggregated 8 → 7 (-1)", "10.0 s aggregated 7 → 6 (-1)", "15.0 s aggregated 6 → 7 (+1)", "20.0 s aggregated 7 → 8 (+1)"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("decisions = %q, want %q", got, want)
	}
	if v.Decisions[2].Index != 2 || v.Decisions[2].Reason != "load: est TTFT 534 ms > 500 ms SLA: aggregated +1" {
		t.Errorf("decision 2 = %+v", v.Decisions[2])
	}
	// provisioned workers: a draining worker still holds its GPU
	if len(v.Pools) != 1 || v.Pools[0] != (PlannerRange{"aggregated", 6, 8}) {
		t.Errorf("pools = %+v", v.Pools)
	}
	const sum = "5 ticks, 4 scaling decisions · 0.08 GPU·h · 7.21 GPUs on average (time-weighted) · workers provisioned: 6–8"
	if v.Summary != sum {
		t.Errorf("summary = %q, want %q", v.Summary, sum)
	}
	if v.GPUHoursAttr() != "0.0801" {
		t.Errorf("GPUHoursAttr = %q", v.GPUHoursAttr())
	}
	// the headline: the GPUs on average beside the GPU count, and the status line
	for _, k := range kpis(p) {
		if k.ID == "kpi-gpus" && k.Sub != "H100 SXM, 7.21 on average (planner)" {
			t.Errorf("GPUs card sub = %q", k.Sub)
		}
	}
	if got := ranWhat(p); got != "1,000 requests, 8 × H100 SXM, default timing, planner in the loop" {
		t.Errorf("ranWhat = %q", got)
	}
	var ms []map[string]any
	if err := json.Unmarshal([]byte(markersJSON(v.Decisions)), &ms); err != nil || len(ms) != 4 || ms[3]["index"] != 3.0 || ms[3]["to"] != 8.0 || ms[3]["pool"] != "aggregated" {
		t.Errorf("markers = %v (%v)", ms, err)
	}
}

func TestPlannerViewPools(t *testing.T) {
	// disaggregated: each pool's decisions against its own workers; a pool
	// the first tick does not change is no decision; no workers series:
	// the ranges come from the ticks
	pool := func(name string, target, active, starting int) schema.PlannerPool {
		return schema.PlannerPool{Pool: name, Target: target, WorkerCount: schema.WorkerCount{Active: active, Starting: starting}}
	}
	p := &plannerSection{Planner: schema.Planner{
		Ticks: []schema.PlannerTick{
			{Tick: 0, TMs: 1000, Reason: "a", Pools: []schema.PlannerPool{pool("prefill", 2, 1, 1), pool("decode", 1, 1, 0)}},
			{Tick: 1, TMs: 2000, Reason: "b", Pools: []schema.PlannerPool{pool("prefill", 2, 2, 0), pool("decode", 3, 1, 2)}},
		},
	}}
	v := plannerView(p)
	if len(v.Decisions) != 1 || v.Decisions[0].Pool != "decode" || v.Decisions[0].From != 1 || v.Decisions[0].To != 3 || v.Decisions[0].Index != 1 {
		t.Errorf("decisions = %+v", v.Decisions)
	}
	if len(v.Pools) != 2 || v.Pools[0] != (PlannerRange{"prefill", 2, 2}) || v.Pools[1] != (PlannerRange{"decode", 1, 3}) {
		t.Errorf("pools = %+v", v.Pools)
	}
	if !math.IsNaN(v.GPUHours) || v.GPUHoursAttr() != "" {
		t.Errorf("GPU-hours = %v", v.GPUHours)
	}
	if !strings.HasSuffix(v.Summary, "workers provisioned: prefill 2, decode 1–3") || !strings.Contains(v.Summary, "— GPU·h") {
		t.Errorf("summary = %q", v.Summary)
	}
	// with a workers series, a pool's first tick compares with the step
	// before it
	p.Workers = []schema.WorkerStep{{TMs: 0, Pool: "prefill", WorkerCount: schema.WorkerCount{Active: 1}}, {TMs: 0, Pool: "decode", WorkerCount: schema.WorkerCount{Active: 1}}}
	if v := plannerView(p); len(v.Decisions) != 2 || v.Decisions[0].Pool != "prefill" || v.Decisions[0].From != 1 {
		t.Errorf("decisions = %+v", v.Decisions)
	}
	if plannerView(nil) != nil {
		t.Error("no planner, no view")
	}
	if r, _ := parseReport([]byte(`{"summary": {}}`)); r.Planner != nil {
		t.Error("a report without planner has one")
	}
}

// Issue 31 item 1: each decision row carries its pool's direction, so the
// table shows the way down as well as the way up.
func TestItem31_1DecisionAction(t *testing.T) {
	p, err := parseReport([]byte(plannerJSON))
	if err != nil {
		t.Fatal(err)
	}
	v := plannerView(p.Planner)
	for i, want := range []string{"scale_down", "scale_down", "scale_up", "scale_up"} {
		if i >= len(v.Decisions) || v.Decisions[i].Action != want {
			t.Errorf("decision %d = %+v, want action %s", i, v.Decisions, want)
		}
	}
}
