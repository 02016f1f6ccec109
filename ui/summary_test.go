package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/metrics"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// An undefined summary value (null) shows as "—", never as 0, and is not
// compared with the previous run.
func TestSummaryNullIsUndefined(t *testing.T) {
	r, err := parseReport([]byte(`{"summary": {"request_throughput_rps": null, "mean_ttft_ms": null, "num_requests": 3}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	if !math.IsNaN(s[schema.RequestThroughputRPS]) || s[schema.NumRequests] != 3 {
		t.Fatalf("parsed %v", s)
	}
	groups, _ := summaryGroups(s, map[string]float64{schema.RequestThroughputRPS: 2, schema.NumRequests: 3}, "aggregated")
	for _, g := range groups {
		for _, r := range g.Rows {
			if r.Key == schema.RequestThroughputRPS && (r.Value != "—" || r.Delta != "") {
				t.Fatalf("row %+v", r)
			}
		}
	}
	if _, rows, _ := aiperfTable(s); rows[0].Cells[0] != "n/a" {
		t.Fatalf("TTFT avg cell %q", rows[0].Cells[0])
	}
}

// The router table: each worker's requests and share; the estimated
// overlap beside the reuse obtained only for routers that estimate.
func TestRouterRows(t *testing.T) {
	r, err := parseReport([]byte(`{"summary": {}, "workers": [{"worker": 0, "requests": 3, "request_share": 0.75}, {"worker": 1, "requests": 1, "request_share": 0.25}]}`))
	if err != nil {
		t.Fatal(err)
	}
	rows, overlap := routerRows(r.Workers, map[string]float64{schema.RouterEstimatedOverlapRatio: 0.2, schema.PrefixCacheReusedRatio: 0.19})
	if len(rows) != 2 || rows[0] != (BalanceRow{"0", "3", "75.0 %"}) || overlap != "estimated overlap 20.0 % of prompt tokens, reuse obtained 19.0 %" {
		t.Fatalf("rows %v overlap %q", rows, overlap)
	}
	if _, o := routerRows(r.Workers, map[string]float64{schema.RouterEstimatedOverlapRatio: math.NaN()}); o != "" {
		t.Fatalf("round robin: %q", o)
	}
}

// rowsByKey indexes the grouped summary by key, with each row's group.
func rowsByKey(groups []SummaryGroup) (map[string]SummaryRow, map[string]string) {
	rows, group := map[string]SummaryRow{}, map[string]string{}
	for _, g := range groups {
		for _, r := range g.Rows {
			rows[r.Key], group[r.Key] = r, g.Title
		}
	}
	return rows, group
}

// The summary is grouped, with units, human durations and help on every
// row, and compared with the baseline.
func TestSummaryGroups(t *testing.T) {
	cur := map[string]float64{"zeta": 1, schema.TTFT.Key(schema.Mean): 12.5, schema.NumRequests: 10, schema.DurationMs: 3542951.227,
		schema.GoodputRequestThroughputRPS: 1.5, schema.PrefixCacheReusedRatio: 0.0547, schema.SGLangCacheHitRatio: 0.66, schema.NumPreemptions: 2,
		schema.OutputThroughputTokS: 1026.6, schema.KVTransferBytes: 1 << 30, schema.WallTimeMs: 200}
	groups, speed := summaryGroups(cur, map[string]float64{schema.TTFT.Key(schema.Mean): 10, schema.NumRequests: 10, schema.WallTimeMs: 100}, "disaggregated")
	rows, group := rowsByKey(groups)
	for k, want := range map[string]string{schema.TTFT.Key(schema.Mean): "Latency", schema.OutputThroughputTokS: "Throughput",
		schema.PrefixCacheReusedRatio: "Cache", schema.SGLangCacheHitRatio: "Cache", schema.NumPreemptions: "Scheduling", schema.GoodputRequestThroughputRPS: "SLA (goodput)",
		schema.KVTransferBytes: "Disaggregation", "zeta": "Other", schema.NumRequests: "Other"} {
		if group[k] != want {
			t.Errorf("%s in group %q, want %q", k, group[k], want)
		}
	}
	if _, ok := rows[schema.WallTimeMs]; ok || len(speed) != 1 || speed[0].Key != schema.WallTimeMs || speed[0].Delta != "" || speed[0].Base != "" {
		t.Errorf("wall clock must be apart and never compared: %+v", speed)
	}
	if r := rows[schema.TTFT.Key(schema.Mean)]; r.Delta != "+25.0%" || r.Value != "12.50 ms" || r.Base != "10 ms" {
		t.Errorf("row = %+v", r)
	}
	if r := rows[schema.DurationMs]; r.Value != "3,542,951.23 ms (59 min 2 s)" {
		t.Errorf("duration %q", r.Value)
	}
	if r := rows[schema.PrefixCacheReusedRatio]; r.Value != "5.47 %" {
		t.Errorf("ratio %q", r.Value)
	}
	for k, r := range rows {
		if r.Help == "" || r.TipID == "" {
			t.Errorf("%s has no help", k)
		}
	}
	// aggregated: the prefill_/decode_ fields are not a disaggregation group
	groups, _ = summaryGroups(map[string]float64{schema.PrefillGPUsPerWorker: 0}, nil, "aggregated")
	if len(groups) != 1 || groups[0].Title != "Other" {
		t.Errorf("aggregated groups %+v", groups)
	}
}

func TestAIPerfTable(t *testing.T) {
	tab, rows, lines := aiperfTable(map[string]float64{schema.TTFT.Key(schema.Mean): 12.345, schema.ITL.Key(schema.P99): 7, schema.NumRequests: 1000})
	if tab.Title != metrics.Title || len(rows) != len(metrics.Rows) || len(tab.Columns) != len(metrics.Columns) {
		t.Fatalf("table %+v", tab)
	}
	if rows[0].Cells[0] != "12.35" || rows[3].Cells[3] != "7" || rows[0].Help == "" || rows[0].TipID == rows[1].TipID {
		t.Fatalf("rows %+v", rows[:4])
	}
	var found bool
	for _, l := range lines {
		found = found || (l.Label == "Request Count (requests)" && l.Cells[0] == "1,000")
	}
	if !found {
		t.Errorf("lines %+v", lines)
	}
}

const sampleReport = `{"summary": {"num_requests": 1000, "completed_requests": 1000, "goodput_completed_requests": 594,
 "goodput_request_throughput_rps": 1.7455, "output_throughput_tok_s": 1026.6, "total_gpus": 8,
 "median_ttft_ms": 360.7, "p99_ttft_ms": 7849.2, "median_itl_ms": 7.8, "p99_itl_ms": 19.3, "duration_ms": 340299.9},
 "sla": {"ttft_ms": 500, "itl_ms": 50, "e2e_ms": null},
 "deployment": {"mode": "aggregated", "backend": "vllm", "model": "llama-3.1-8b", "pools": [{"name": "aggregated",
  "hardware": "h100_sxm", "replicas": 8, "tensor": 1, "attention_data": 1, "gpus_per_worker": 1, "timing": "default",
  "validation": "roofline: median error 11.6 % TPOT, 69.2 % TTFT on 778 public Hopper fixed-concurrency points", "capacity": "default", "kv_blocks": 7004, "block_size": 64,
  "gpu_memory_bytes": 85520809984, "weights_bytes": 16059990016, "kv_cache_bytes": 58753810432,
  "reserve_bytes": 2147483648, "free_bytes": 8559525888, "fits": true}]},
 "warnings": ["engine.workers.aggregated.kv_cache.capacity: too big"]}`

func TestKPIsBadgeMemory(t *testing.T) {
	r, err := parseReport([]byte(sampleReport))
	if err != nil {
		t.Fatal(err)
	}
	k := map[string]KPI{}
	for _, x := range kpis(r) {
		k[x.ID] = x
		if x.Help == "" {
			t.Errorf("%s has no help", x.ID)
		}
	}
	if k["kpi-throughput"].Value != "1,026.60 tok/s" || k["kpi-throughput"].Sub != "128.32 tok/s per GPU" {
		t.Errorf("throughput %+v", k["kpi-throughput"])
	}
	if k["kpi-goodput"].Value != "1.75 req/s" || !strings.HasPrefix(k["kpi-goodput"].Sub, "59.4 % of requests met the SLA (TTFT ≤ 500 ms, ITL ≤ 50 ms)") {
		t.Errorf("goodput %+v", k["kpi-goodput"])
	}
	if k["kpi-ttft"].Value != "360.70 ms / 7.8 s" || k["kpi-duration"].Value != "5 min 40 s" {
		t.Errorf("ttft %+v duration %+v", k["kpi-ttft"], k["kpi-duration"])
	}
	if got := ranWhat(r); got != "1,000 requests, 8 × H100 SXM, default timing" {
		t.Errorf("ranWhat %q", got)
	}
	if b := badgePools(r.Deployment); len(b) != 1 || b[0].GPU != "H100 SXM" || b[0].Timing != "default timing" || !strings.HasPrefix(b[0].Layout, "8 replicas × tensor 1 × attention-data 1") {
		t.Errorf("badge %+v", b)
	}
	// What priced the kernels is the badge's detail; the status line says
	// the timing type once (it said "default timing (aic …) timing").
	r.Deployment.Pools[0].TimingKernels = "aic vllm 0.24.0 h100_sxm"
	if got := ranWhat(r); got != "1,000 requests, 8 × H100 SXM, default timing" {
		t.Errorf("ranWhat %q under the kernel tables", got)
	}
	if b := badgePools(r.Deployment); b[0].Timing != "default timing (aic vllm 0.24.0 h100_sxm)" {
		t.Errorf("badge timing %q under the kernel tables", b[0].Timing)
	}
	m := memoryLines(r.Deployment)
	if len(m) != 1 || !m[0].Fits || !strings.Contains(m[0].Text, "weights 15.0 GiB, KV cache 54.7 GiB") || !strings.Contains(m[0].Text, "free 8.0 GiB") {
		t.Errorf("memory %+v", m)
	}
	r.Deployment.Pools[0].Fits, r.Deployment.Pools[0].FreeBytes = false, -(1 << 30)
	if m := memoryLines(r.Deployment); m[0].Fits || !strings.Contains(m[0].Text, "does not fit: 1.0 GiB over") {
		t.Errorf("no fit %+v", m)
	}
	r.Summary = map[string]float64{schema.NumRequests: 3}
	for _, x := range kpis(r) {
		if x.ID == "kpi-goodput" && x.Value != "no SLA set" {
			t.Errorf("no SLA: %+v", x)
		}
	}
}

func TestRunName(t *testing.T) {
	a := "engine: {workers: {aggregated: {parallelism: {replicas: 8}}}}\nrouter: {policy: round_robin}\n"
	b := "engine: {workers: {aggregated: {parallelism: {replicas: 4}}}}\nrouter: {policy: kv_router}\n"
	if got := runName(runInputs{}, runInputs{a, "x", ""}, 1, true); got != "run 1" {
		t.Errorf("first %q", got)
	}
	if got := runName(runInputs{a, "x", ""}, runInputs{b, "x", ""}, 2, false); got != "replicas=4, router.policy=kv_router" {
		t.Errorf("changed %q", got)
	}
	if got := runName(runInputs{a, "x", ""}, runInputs{a, "x", ""}, 3, false); got != "run 3 (same inputs)" {
		t.Errorf("same %q", got)
	}
	if got := runName(runInputs{a, "sample: default", ""}, runInputs{a, "small.jsonl", ""}, 4, false); got != "trace=small.jsonl" {
		t.Errorf("trace %q", got)
	}
	// Issue 30 item 5: a profile change is a change of inputs.
	if got := runName(runInputs{a, "x", ""}, runInputs{a, "x", "perf_data.npz"}, 5, false); got != "profile=perf_data.npz" {
		t.Errorf("profile %q", got)
	}
	if got := runName(runInputs{a, "x", "perf_data.npz"}, runInputs{a, "x", ""}, 6, false); got != "profile=none" {
		t.Errorf("profile dropped %q", got)
	}
	runs := []*RunEntry{{ID: 1}, {ID: 2}, {ID: 3}}
	if baselineIndex(runs, 0) != 1 || baselineIndex(runs, 1) != 0 || baselineIndex(runs, 3) != 1 || baselineIndex(runs[:1], 0) != -1 {
		t.Error("baselineIndex")
	}
}

// The page's default sample is the CLI's embedded sample: the conversation
// trace's first defaultSampleBytes bytes.
func TestDefaultSampleIsCLISample(t *testing.T) {
	cliSample, err := os.ReadFile("../cmd/dynosim/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	gz, err := os.ReadFile("../public/traces/conversation_trace.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	full, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if len(cliSample) != defaultSampleBytes || !bytes.HasPrefix(full, cliSample) {
		t.Fatalf("cmd/dynosim/sample.jsonl (%d bytes) is not the first %d bytes of the conversation trace", len(cliSample), defaultSampleBytes)
	}
}
