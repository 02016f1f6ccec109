package measured

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// Row is one metric measured and predicted.
type Row struct {
	Key                 string // the report summary key, e.g. "mean_ttft_ms"
	Measured, Predicted float64
	Error               float64 // Predicted/Measured − 1
}

// order is the order of Compare's rows: latencies (TTFT, TTST, ITL, TPOT,
// E2E, each mean, median, p75, p90, p95, p99, min, max, std), then
// throughputs, run totals, and the request length statistics, which show
// whether the prediction replayed the same workload.
var order = func() []string {
	stats := []schema.Stat{schema.Mean, schema.Median, schema.P75, schema.P90, schema.P95, schema.P99, schema.Min, schema.Max, schema.Std}
	var keys []string
	family := func(f schema.Family) {
		for _, s := range stats {
			keys = append(keys, f.Key(s))
		}
	}
	for _, f := range []schema.Family{schema.TTFT, schema.TTST, schema.ITL, schema.TPOT, schema.E2E} {
		family(f)
	}
	keys = append(keys, schema.RequestThroughputRPS, schema.OutputThroughputTokS, schema.InputThroughputTokS, schema.TotalThroughputTokS,
		schema.CompletedRequests, schema.TotalInputTokens, schema.TotalOutputTokens, schema.DurationMs)
	family(schema.InputLen)
	family(schema.OutputLen)
	return keys
}()

// Compare pairs every summary value the run measured with the prediction's (prediction is the JSON report `dynosim predict --format json` writes, the prediction.json of --output-dir), in a fixed, documented order. Keys the prediction lacks are skipped; an empty result is an error.
//
// The order is: TTFT, TTST, ITL, TPOT and E2E latency (each mean, median,
// p75, p90, p95, p99, min, max, std), request/output/input/total
// throughput, completed requests, total input and output tokens, duration,
// then the input and output length statistics. A key the prediction has
// as null, or whose measured value is 0 (no relative error), is skipped.
func Compare(run *Run, prediction []byte) ([]Row, error) {
	if run == nil {
		return nil, errors.New("compare: no measured run")
	}
	var p struct {
		Summary map[string]*float64 `json:"summary"`
	}
	if err := json.Unmarshal(prediction, &p); err != nil {
		return nil, fmt.Errorf("prediction: invalid JSON (want the report of `dynosim predict --format json`): %v", err)
	}
	if p.Summary == nil {
		return nil, errors.New("prediction: no summary object (want the report of `dynosim predict --format json`, prediction.json of --output-dir)")
	}
	var rows []Row
	for _, k := range order {
		m, ok := run.Summary[k]
		pv := p.Summary[k]
		if !ok || pv == nil || m == 0 || math.IsNaN(m) || math.IsInf(*pv, 0) || math.IsNaN(*pv) {
			continue
		}
		rows = append(rows, Row{Key: k, Measured: m, Predicted: *pv, Error: *pv/m - 1})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("compare: the prediction has none of the %d metrics the run measured (%s)", len(run.Summary), strings.Join(measuredKeys(run, 4), ", "))
	}
	return rows, nil
}

// measuredKeys lists up to n of the run's keys, in Compare's order.
func measuredKeys(run *Run, n int) []string {
	var ks []string
	for _, k := range order {
		if _, ok := run.Summary[k]; ok {
			if len(ks) == n {
				return append(ks, "…")
			}
			ks = append(ks, k)
		}
	}
	return ks
}

// FormatTable writes rows as an aligned text table: metric, measured, predicted, error (in %).
func FormatTable(w io.Writer, rows []Row) {
	cells := [][]string{{"metric", "measured", "predicted", "error"}}
	for _, r := range rows {
		pct := strconv.FormatFloat(100*r.Error, 'f', 1, 64)
		if pct == "-0.0" {
			pct = "0.0"
		}
		cells = append(cells, []string{r.Key, value(r.Measured), value(r.Predicted), pct + "%"})
	}
	width := make([]int, 4)
	for _, c := range cells {
		for i, s := range c {
			width[i] = max(width[i], utf8.RuneCountInString(s))
		}
	}
	var b strings.Builder
	for _, c := range cells {
		for i, s := range c {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(s))
			switch {
			case i == 0: // names left, numbers right
				b.WriteString(s + pad)
			default:
				b.WriteString("  " + pad + s)
			}
		}
		b.WriteString("\n")
	}
	_, _ = io.WriteString(w, b.String()) // a failed write is the writer's to report
}

// value formats a measured or predicted number: 4 significant digits for
// small values, whole numbers for large ones.
func value(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
