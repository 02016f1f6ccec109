package kernels

import (
	"fmt"
	"math"
	"sort"
)

// Quant is one of the FP8 activation-quantisation costs AIC collects
// beside its fp8 GEMMs (the "quantize" family: computescale_perf and
// scale_matrix_perf), at one GEMM input width K, over m tokens.
//
// Why a table needs them: AIC's fp8 GEMM rows are measured through the
// engine's FP8 linear layer with no input scale in the weights, so the
// layer quantises its input dynamically and every fp8 row includes the
// dynamic scale computation (collector/trtllm/collect_gemm.py @ 095f58a5,
// run_gemm: "the collected fp8 GEMM includes the compute-scale overhead").
// A static-scale FP8 checkpoint (ModelOpt/NVIDIA per-tensor FP8, what
// the FP8 engines here serve) skips it, and a GEMM whose input was
// already quantised by the kernel before it (attention output into
// o_proj, SiLU-and-mul into down_proj) skips the quantise kernel too.
// AIC prices that "fp8_static" mode as the fp8 row minus compute_scale,
// minus scale_matrix for such low-precision-input GEMMs, floored at the
// GEMM's speed of light (aic-core/rust/aiconfigurator-core/src/operators/
// gemm.rs GemmOp::query, and sdk/models/llama.py's low_precision_input
// o_proj and ffn2 GEMMs, @ 095f58a5).
type Quant struct {
	Op    string `json:"op"` // compute_scale or scale_matrix
	K     int    `json:"k"`
	Curve Series `json:"curve"` // X = m (tokens)
}

// Quant op names.
const (
	ComputeScale = "compute_scale"
	ScaleMatrix  = "scale_matrix"
)

// FindQuant returns the quantisation curve of op at input width k, or nil.
func (t *Table) FindQuant(op string, k int) *Quant {
	i := sort.Search(len(t.Quant), func(i int) bool {
		q := &t.Quant[i]
		return q.Op > op || q.Op == op && q.K >= k
	})
	if i < len(t.Quant) && t.Quant[i].Op == op && t.Quant[i].K == k {
		return &t.Quant[i]
	}
	return nil
}

// Ms is the cost in ms over m tokens, as AIC's query_scale_table
// (perf_database/gemm.rs @ 095f58a5) reads it: straight lines between
// measured m; outside them compute_scale (a difference of two kernels)
// is held flat at the boundary, while scale_matrix (a memory-bound
// kernel) keeps the boundary's utilisation, its latency ∝ m.
func (q *Quant) Ms(m float64) float64 {
	c := &q.Curve
	x, y := c.X, c.Ms
	i := sort.SearchFloat64s(x, m)
	switch {
	case i < len(x) && x[i] == m:
		return y[i]
	case i == 0:
		if q.Op == ScaleMatrix {
			return y[0] * m / x[0]
		}
		return y[0]
	case i < len(x):
		return lerp(x[i-1], y[i-1], x[i], y[i], m)
	}
	last := len(x) - 1
	if q.Op == ScaleMatrix {
		return y[last] * m / x[last]
	}
	return y[last]
}

// StaticMs is the GEMM's latency over m tokens for a static-scale FP8
// checkpoint (AIC's fp8_static): the fp8 curve minus the dynamic scale
// computation cs and, for a GEMM whose input arrives quantised, minus the
// quantise kernel sm (nil: not subtracted), never below the GEMM's speed
// of light. Other dtypes, or no cs, give Ms unchanged.
func (g *GEMM) StaticMs(m float64, p Peak, cs, sm *Quant) float64 {
	ms := g.Ms(m, p)
	if g.DType != "fp8" || cs == nil {
		return ms
	}
	ms -= cs.Ms(m)
	if sm != nil {
		ms -= sm.Ms(m)
	}
	return max(ms, g.SOL(m, p))
}

// checkDeltas is checkSeries for costs that may be zero or negative
// (compute_scale is measured as the difference of two kernels).
func checkDeltas(x, ms []float64) error {
	if len(x) == 0 || len(x) != len(ms) {
		return fmt.Errorf("%d points, %d latencies", len(x), len(ms))
	}
	for i := range x {
		if i > 0 && x[i] <= x[i-1] {
			return fmt.Errorf("points not increasing at %g", x[i])
		}
		if math.IsNaN(ms[i]) || math.IsInf(ms[i], 0) {
			return fmt.Errorf("latency %g at %g", ms[i], x[i])
		}
	}
	return nil
}
