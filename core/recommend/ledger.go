package recommend

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// JSON is recommendation.json.
func (l *Ledger) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("recommend: %w", err)
	}
	return append(b, '\n'), nil
}

// csvMetrics are the metric columns of recommendation.csv.
var csvMetrics = []string{schema.OutputThroughputTokS, schema.OutputThroughputPerGPUTokS, schema.PerUser.Key(schema.Mean),
	schema.GoodputRequestThroughputRPS, schema.TTFT.Key(schema.Mean), schema.TTFT.Key(schema.P99), schema.ITL.Key(schema.Mean), schema.E2E.Key(schema.Mean), schema.DurationMs, schema.GPUHours, schema.MaxRate}

// CSV is recommendation.csv: one row per candidate in ledger (rank)
// order, the searched values and the metrics as columns, is_top_n and
// is_pareto flags, then rank, within_budget, meets_sla, sla_met_fraction
// and label (issue 32).
func (l *Ledger) CSV() []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	head := []string{"candidate_id", "trial", "status", "reason_category", "reason", "used_gpus", "score", "cache_hit", "is_top_n", "is_pareto"}
	for _, d := range l.Provenance.Dims {
		head = append(head, d.Path)
	}
	w.Write(append(append(head, csvMetrics...), "rank", "within_budget", "meets_sla", "sla_met_fraction", "label"))
	num := func(v float64, ok bool) string {
		if !ok || v != v {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	for _, e := range l.Candidates {
		score := ""
		if e.Score != nil {
			score = num(*e.Score, true)
		}
		row := []string{e.ID, strconv.Itoa(e.Trial), e.Status, e.ReasonCategory, e.Reason, strconv.Itoa(e.UsedGPUs), score,
			strconv.FormatBool(e.CacheHit), strconv.FormatBool(slices.Contains(l.Views.TopN, e.ID)), strconv.FormatBool(slices.Contains(l.Views.ParetoFront, e.ID))}
		for _, d := range l.Provenance.Dims {
			row = append(row, e.Config[d.Path])
		}
		for _, k := range csvMetrics {
			v, ok := e.Metrics[k]
			row = append(row, num(v, ok))
		}
		frac := ""
		if e.SLAMetFraction != nil {
			frac = num(*e.SLAMetFraction, true)
		}
		rank := ""
		if e.Rank > 0 {
			rank = strconv.Itoa(e.Rank)
		}
		row = append(row, rank, strconv.FormatBool(e.WithinBudget), strconv.FormatBool(e.MeetsSLA), frac, e.Label)
		w.Write(row)
	}
	w.Flush()
	return b.Bytes()
}

// Recommended are the entries to write as recommendations/NNNN.yaml: the
// view's candidates in its order.
func (l *Ledger) Recommended() []Entry {
	ids := l.Views.TopN
	if l.Target == "pareto" {
		ids = l.Views.ParetoFront
	}
	var out []Entry
	for _, id := range ids {
		for _, e := range l.Candidates {
			if e.ID == id {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// RecommendationYAML is the i-th (0-based) recommendation's file
// NNNN.yaml: entry e's complete predict config (Base with pre, then its
// sets: pre may make file paths absolute), under a comment naming it.
func (sp *Space) RecommendationYAML(l *Ledger, i int, e Entry, pre []string) ([]byte, error) {
	y, err := sp.YAML(append(slices.Clip(pre), e.Sets...))
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("# %s of `dynosim recommend` (target %s): `dynosim predict -c %04d.yaml` reproduces its metrics.\n", e.ID, l.Target, i+1)
	return append([]byte(head), y...), nil
}
