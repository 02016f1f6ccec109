package main

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// SummaryRow is one metric of the summary table, with the previous run's
// value for the compare view.
type SummaryRow struct {
	Key, Value, Prev, Delta string
}

// summaryOrder puts the headline metrics first (AIPerf-style); the rest
// follow alphabetically.
var summaryOrder = []string{
	"num_requests", "completed_requests", "total_input_tokens", "total_output_tokens",
	"duration_ms", "request_throughput_rps", "output_throughput_tok_s",
	"prefix_cache_reused_ratio", "mean_ttft_ms", "median_ttft_ms", "p90_ttft_ms", "p99_ttft_ms",
	"mean_tpot_ms", "mean_itl_ms", "p99_itl_ms", "mean_e2e_latency_ms", "p99_e2e_latency_ms",
	"num_preemptions",
}

// wallClock are the summary fields that measure wall time; the shared
// service (the Worker) reports them as 0.
var wallClock = map[string]bool{"wall_time_ms": true, "processed_tokens_per_s": true, "processed_output_tokens_per_s": true}

// workerShare is what the page reads of a report's per-worker stats.
type workerShare struct {
	Worker   int     `json:"worker"`
	Requests int     `json:"requests"`
	Share    float64 `json:"request_share"`
}

// parseReport extracts the summary map and the workers' shares from report
// JSON, in one decode. An undefined value (null: a rate over no time, a
// latency of no request) becomes NaN and shows as "—".
func parseReport(reportJSON []byte) (map[string]float64, []workerShare, error) {
	var r struct {
		Summary map[string]*float64 `json:"summary"`
		Workers []workerShare       `json:"workers"`
	}
	if err := json.Unmarshal(reportJSON, &r); err != nil {
		return nil, nil, err
	}
	out := make(map[string]float64, len(r.Summary))
	for k, v := range r.Summary {
		out[k] = math.NaN()
		if v != nil {
			out[k] = *v
		}
	}
	return out, r.Workers, nil
}

// summaryRows builds the table rows; prev may be nil.
func summaryRows(cur, prev map[string]float64) []SummaryRow {
	keys := make([]string, 0, len(cur))
	rank := map[string]int{}
	for i, k := range summaryOrder {
		rank[k] = i
	}
	for k := range cur {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		ri, iok := rank[keys[i]]
		rj, jok := rank[keys[j]]
		switch {
		case iok && jok:
			return ri < rj
		case iok != jok:
			return iok
		}
		return keys[i] < keys[j]
	})
	rows := make([]SummaryRow, 0, len(keys))
	for _, k := range keys {
		row := SummaryRow{Key: k, Value: formatNum(cur[k])}
		if prev != nil {
			if p, ok := prev[k]; ok {
				row.Prev = formatNum(p)
				switch {
				case math.IsNaN(p) || math.IsNaN(cur[k]):
					// undefined on one side: no change to show
				case wallClock[k] && (p == 0 || cur[k] == 0):
					// a service run has no wall clock (0): no change to show
				case p != 0:
					row.Delta = fmt.Sprintf("%+.1f%%", (cur[k]-p)/math.Abs(p)*100)
				case cur[k] != 0:
					row.Delta = "new"
				}
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func formatNum(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// LatencyRow is one row of the AIPerf-style table: a distribution's avg,
// min, max, p99, p90, p75 and std.
type LatencyRow struct {
	Label string
	Cells []string
}

// AIPerfColumns heads the AIPerf-style table (spec §8.8).
var AIPerfColumns = []string{"avg", "min", "max", "p99", "p90", "p75", "std"}

var latencyMetrics = []struct{ label, key string }{
	{"Time to First Token (ms)", "ttft_ms"},
	{"Time to Second Token (ms)", "ttst_ms"},
	{"Request Latency (ms)", "e2e_latency_ms"},
	{"Inter Token Latency (ms)", "itl_ms"},
	{"Output Token Throughput Per User (tokens/s)", "output_token_throughput_per_user"},
}

// latencyRows builds the AIPerf-style table from a summary.
func latencyRows(s map[string]float64) []LatencyRow {
	rows := make([]LatencyRow, 0, len(latencyMetrics))
	for _, m := range latencyMetrics {
		row := LatencyRow{Label: m.label}
		for _, stat := range []string{"mean", "min", "max", "p99", "p90", "p75", "std"} {
			v := s[stat+"_"+m.key]
			cell := "—"
			if !math.IsNaN(v) {
				cell = strconv.FormatFloat(v, 'f', 2, 64)
			}
			row.Cells = append(row.Cells, cell)
		}
		rows = append(rows, row)
	}
	return rows
}

// BalanceRow is one worker of the router table.
type BalanceRow struct{ Worker, Requests, Share string }

// routerRows builds the router table: the requests each worker got and
// their share, and the router's estimated overlap beside the prefix reuse
// obtained (empty for routers that estimate none).
func routerRows(workers []workerShare, sum map[string]float64) ([]BalanceRow, string) {
	rows := make([]BalanceRow, len(workers))
	for i, w := range workers {
		rows[i] = BalanceRow{strconv.Itoa(w.Worker), strconv.Itoa(w.Requests), strconv.FormatFloat(w.Share*100, 'f', 1, 64) + " %"}
	}
	overlap := ""
	if est, ok := sum["router_estimated_overlap_ratio"]; ok && !math.IsNaN(est) {
		overlap = fmt.Sprintf("estimated overlap %.1f %% of prompt tokens, reuse obtained %.1f %%", est*100, sum["prefix_cache_reused_ratio"]*100)
	}
	return rows, overlap
}
