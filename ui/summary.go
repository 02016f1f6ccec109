package main

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/metrics"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// parsedReport is what the page reads of a report: the summary (null → NaN),
// the SLA, the deployment, the warnings, the workers' shares, the TTFT
// breakdown, the watched request's timeline, the planner's section and the
// KV tiers. The sections are core/report/schema's types, so the page keeps
// no copy of the report's shape (and ui.wasm links no simulator code).
type parsedReport struct {
	Summary    map[string]float64
	SLA        *schema.SLAInfo
	Deployment schema.Deployment
	Warnings   []string
	Workers    []schema.WorkerStats
	Breakdown  *schema.BreakdownSection
	Timeline   *requestTimeline
	Planner    *plannerSection
	KVTiers    []schema.TierPool
	Verdict    *schema.Verdict
}

// parseReport decodes report JSON, each section by its schema name. An
// undefined summary value (null: a rate over no time, a latency of no
// request) becomes NaN and shows as "—".
func parseReport(reportJSON []byte) (*parsedReport, error) {
	var sections map[string]json.RawMessage
	if err := json.Unmarshal(reportJSON, &sections); err != nil {
		return nil, err
	}
	var sum map[string]*float64
	r := &parsedReport{}
	for _, s := range []struct {
		name string
		into any
	}{
		{schema.SectionSummary, &sum}, {schema.SectionSLA, &r.SLA}, {schema.SectionDeployment, &r.Deployment},
		{schema.SectionWarnings, &r.Warnings}, {schema.SectionWorkers, &r.Workers}, {schema.SectionTTFTBreakdown, &r.Breakdown},
		{schema.SectionTimeline, &r.Timeline}, {schema.SectionPlanner, &r.Planner}, {schema.SectionKVTiers, &r.KVTiers},
		{schema.SectionVerdict, &r.Verdict},
	} {
		if raw, ok := sections[s.name]; ok {
			if err := json.Unmarshal(raw, s.into); err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
		}
	}
	r.Summary = make(map[string]float64, len(sum))
	for k, v := range sum {
		r.Summary[k] = math.NaN()
		if v != nil {
			r.Summary[k] = *v
		}
	}
	return r, nil
}

// SummaryRow is one metric of the summary: its formatted value, the
// baseline run's value and the change against it.
type SummaryRow struct {
	Key, Help, TipID   string
	Value, Base, Delta string
}

// SummaryGroup is one titled block of the summary.
type SummaryGroup struct {
	Title string
	Rows  []SummaryRow
}

// groupTitles is the order of the summary's groups.
var groupTitles = []string{"Latency", "Throughput", "Cache", "Scheduling", "SLA (goodput)", "Disaggregation", "Other"}

// groupOf is the group of a summary key ("" for the wall-clock keys).
func groupOf(k, mode string) string {
	switch {
	case schema.IsWallClock(k):
		return ""
	case strings.HasPrefix(k, "goodput_"):
		return "SLA (goodput)"
	case strings.HasPrefix(k, "prefill_") || strings.HasPrefix(k, "decode_") || strings.Contains(k, "kv_transfer"):
		if mode == "disaggregated" {
			return "Disaggregation"
		}
		return "Other"
	case strings.Contains(k, "throughput"):
		return "Throughput"
	case strings.Contains(k, "ttft") || strings.Contains(k, "ttst") || strings.Contains(k, "itl_") ||
		strings.Contains(k, "tpot") || strings.Contains(k, "e2e_latency"):
		return "Latency"
	case strings.Contains(k, "cache") || strings.Contains(k, "overlap") || strings.HasPrefix(k, "kv_"):
		return "Cache"
	case k == schema.NumPreemptions || strings.Contains(k, "router_queue") || k == schema.RejectedRequests || k == schema.UnfinishedRequests:
		return "Scheduling"
	}
	return "Other"
}

// keyOrder puts the headline keys first, then distributions by metric and
// statistic; the rest follow alphabetically.
var keyOrder = []string{
	schema.NumRequests, schema.CompletedRequests, schema.TotalInputTokens, schema.TotalOutputTokens,
	schema.DurationMs, schema.TotalGPUs, schema.GPUHours, schema.OutputThroughputTokS, schema.RequestThroughputRPS,
	schema.TotalThroughputTokS, schema.InputThroughputTokS, schema.GoodputRequestThroughputRPS,
	schema.GoodputCompletedRequests, schema.PrefixCacheReusedRatio,
}

var stemOrder = []schema.Family{schema.TTFT, schema.TTST, schema.ITL, schema.TPOT, schema.E2E, schema.PerUser, schema.InputLen, schema.OutputLen}
var statOrder = []schema.Stat{schema.Mean, schema.Median, schema.P75, schema.P90, schema.P95, schema.P99, schema.Min, schema.Max, schema.Std}

func sortRank(k string) (int, int) {
	for i, o := range keyOrder {
		if k == o {
			return i, 0
		}
	}
	for si, st := range statOrder {
		for i, f := range stemOrder {
			if k == f.Key(st) {
				return len(keyOrder) + i, si
			}
		}
	}
	return 1 << 20, 0
}

func sortKeys(keys []string) {
	sort.Slice(keys, func(i, j int) bool {
		a1, a2 := sortRank(keys[i])
		b1, b2 := sortRank(keys[j])
		if a1 != b1 {
			return a1 < b1
		}
		if a2 != b2 {
			return a2 < b2
		}
		return keys[i] < keys[j]
	})
}

// summaryGroups builds the grouped summary of cur against base (nil: no
// compare) and, apart, the simulator-speed rows (never compared).
func summaryGroups(cur, base map[string]float64, mode string) ([]SummaryGroup, []SummaryRow) {
	byGroup := map[string][]string{}
	var wall []string
	for k := range cur {
		if g := groupOf(k, mode); g != "" {
			byGroup[g] = append(byGroup[g], k)
		} else {
			wall = append(wall, k)
		}
	}
	var groups []SummaryGroup
	for _, title := range groupTitles {
		keys := byGroup[title]
		if len(keys) == 0 {
			continue
		}
		sortKeys(keys)
		g := SummaryGroup{Title: title}
		for _, k := range keys {
			g.Rows = append(g.Rows, summaryRow(k, cur, base))
		}
		groups = append(groups, g)
	}
	sort.Strings(wall)
	var speed []SummaryRow
	for _, k := range wall {
		speed = append(speed, SummaryRow{Key: k, Help: keyHelp(k), TipID: "tip-wall-" + k, Value: formatKey(k, cur[k])})
	}
	return groups, speed
}

// keyHelp is the tooltip of a summary key: metrics.Help, or a fallback
// naming what the key measures.
func keyHelp(k string) string {
	if h := metrics.Help(k); h != "" {
		return h
	}
	switch k {
	case schema.ProcessedTokensPerS, schema.ProcessedOutputTokensPerS:
		return "How fast the simulator ran on this machine (tokens simulated per wall-clock second). Not a prediction."
	case schema.InputThroughputTokS:
		return "Prompt tokens of completed requests per simulated second."
	case schema.TotalThroughputTokS:
		return "Prompt and output tokens of completed requests per simulated second."
	case schema.ProcessedTokens:
		return "Tokens the simulated engines processed (prefill and decode, recomputation included)."
	case schema.PrefillGPUsPerWorker, schema.DecodeGPUsPerWorker:
		return "GPUs per worker of the pool (0: no such pool)."
	case schema.PrefillWorkerSeconds, schema.DecodeWorkerSeconds:
		return "Simulated seconds the pool's workers were provisioned, summed over workers."
	}
	return "Summary field " + k + " of the report."
}

func summaryRow(k string, cur, base map[string]float64) SummaryRow {
	row := SummaryRow{Key: k, Help: keyHelp(k), TipID: "tip-sum-" + k, Value: formatKey(k, cur[k])}
	if base == nil || schema.IsWallClock(k) {
		return row
	}
	p, ok := base[k]
	if !ok {
		return row
	}
	row.Base = formatKey(k, p)
	row.Delta = delta(cur[k], p)
	return row
}

// delta is the change from p to v ("" when either is undefined).
func delta(v, p float64) string {
	switch {
	case math.IsNaN(p) || math.IsNaN(v):
		return ""
	case p != 0:
		return fmt.Sprintf("%+.1f%%", (v-p)/math.Abs(p)*100)
	case v != 0:
		return "new"
	}
	return "±0"
}

// formatKey prints a summary value with its unit, read from the key's
// suffix; a value in ms of a second or more also as a human duration.
func formatKey(k string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	n := metrics.Format(v)
	switch {
	case strings.HasSuffix(k, "_ms"):
		if math.Abs(v) >= 1000 {
			return n + " ms (" + metrics.Duration(v) + ")"
		}
		return n + " ms"
	case strings.HasSuffix(k, "_ratio"):
		return strconv.FormatFloat(v*100, 'f', 2, 64) + " %"
	case strings.HasSuffix(k, "_rps"):
		return n + " req/s"
	case strings.HasSuffix(k, "_per_user"):
		return n + " tok/s/user"
	case strings.HasSuffix(k, "_tok_s") || strings.HasSuffix(k, "tokens_per_s"):
		return n + " tok/s"
	case strings.HasSuffix(k, "_bytes"):
		return n + " B (" + gib(v) + ")"
	case strings.HasSuffix(k, "_seconds"):
		return n + " s (" + metrics.Duration(v*1000) + ")"
	case k == schema.GPUHours:
		return n + " GPU·h"
	case strings.Contains(k, "tokens") || strings.Contains(k, "sequence_length"):
		return n + " tokens"
	case strings.Contains(k, "gpus"):
		return n + " GPUs"
	}
	return n
}

func gib(b float64) string { return strconv.FormatFloat(b/(1<<30), 'f', 1, 64) + " GiB" }

// AIPerfRow is a row of the AIPerf table with its tooltip id.
type AIPerfRow struct {
	metrics.Row
	TipID string
}

// aiperfTable builds the AIPerf table with the shared spec (the CLI's
// --format table prints the same).
func aiperfTable(s map[string]float64) (metrics.Table, []AIPerfRow, []AIPerfRow) {
	t := metrics.Build(s)
	rows := make([]AIPerfRow, len(t.Rows))
	for i, r := range t.Rows {
		rows[i] = AIPerfRow{r, fmt.Sprintf("tip-aip-%d", i)}
	}
	lines := make([]AIPerfRow, len(t.Lines))
	for i, r := range t.Lines {
		lines[i] = AIPerfRow{r, fmt.Sprintf("tip-aipl-%d", i)}
	}
	return t, rows, lines
}

// BalanceRow is one worker of the router table.
type BalanceRow struct{ Worker, Requests, Share string }

// routerRows builds the router table: the requests each worker got and
// their share, and the router's estimated overlap beside the prefix reuse
// obtained (empty for routers that estimate none).
func routerRows(workers []schema.WorkerStats, sum map[string]float64) ([]BalanceRow, string) {
	rows := make([]BalanceRow, len(workers))
	for i, w := range workers {
		rows[i] = BalanceRow{strconv.Itoa(w.Worker), strconv.Itoa(w.Requests), strconv.FormatFloat(w.RequestShare*100, 'f', 1, 64) + " %"}
	}
	overlap := ""
	if est, ok := sum[schema.RouterEstimatedOverlapRatio]; ok && !math.IsNaN(est) {
		overlap = fmt.Sprintf("estimated overlap %.1f %% of prompt tokens, reuse obtained %.1f %%", est*100, sum[schema.PrefixCacheReusedRatio]*100)
	}
	return rows, overlap
}
