package measured

import (
	"math"
	"slices"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// CDF returns the measured distribution of metric (schema.TTFT, schema.ITL or schema.E2E) as quantiles qs in [0,1] and their values: the 101 points 0, 0.01, …, 1 when the run has per-request values (same rounded-rank rule as the report's `distributions`, see core/report/report.go sortedQuantiles), else the percentiles its summary states (e.g. p50, p90, p99), else nil, nil.
//
// For schema.ITL the per-request values are every inter-token gap (AIPerf's
// inter_chunk_latency lists, vLLM's itls), as the report's ITL
// distribution; a request's mean gap (TPOT) is not used for it.
func (r *Run) CDF(metric schema.Family) (qs, values []float64) {
	var xs []float64
	switch metric {
	case schema.TTFT:
		for _, q := range r.Requests {
			xs = append(xs, q.TTFTMs)
		}
	case schema.E2E:
		for _, q := range r.Requests {
			xs = append(xs, q.E2EMs)
		}
	case schema.ITL:
		xs = slices.Clone(r.gaps)
	default:
		return nil, nil
	}
	xs = slices.DeleteFunc(xs, math.IsNaN)
	if len(xs) > 0 {
		slices.Sort(xs)
		qs, values = make([]float64, 101), make([]float64, 101)
		for i := range qs {
			qs[i] = float64(i) / 100
			values[i] = xs[int(math.Round(float64(len(xs)-1)*qs[i]))]
		}
		return qs, values
	}
	for _, p := range r.pcts[metric] {
		qs, values = append(qs, p.q), append(values, p.v)
	}
	return qs, values
}
