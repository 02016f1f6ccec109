package main

import (
	"fmt"
	"sort"

	"github.com/dynosim/dynosim-web/timing/kernels"
)

// compileQuant keeps AIC's FP8 activation-quantisation costs (the
// "quantize" family, fp8 rows) at every input width k of the catalog's
// fp8 GEMMs, over AIC's m grid: compute_scale (the dynamic scale
// computation every fp8 GEMM row includes) and scale_matrix (the quantise
// kernel); timing/kernels/quant.go says how AIC subtracts them for
// static-scale checkpoints. A k AIC did not collect takes, at each m, the
// straight line between the two collected k around it; outside the
// collected k the boundary's value is held for compute_scale and scaled
// by k (its bytes, the utilisation held) for scale_matrix, as AIC's
// query_scale_table (perf_database/gemm.rs @ 095f58a5) clamps and scales.
func compileQuant(b []byte, op string, sh shapes) ([]kernels.Quant, error) {
	t, err := readParquet(b)
	if err != nil {
		return nil, err
	}
	rows := map[float64]map[float64]float64{} // m → k → ms, first row wins
	for _, row := range t.rows {
		if t.str(row, "quant_dtype") != "fp8" {
			continue
		}
		m, k := float64(t.int(row, "m")), float64(t.int(row, "k"))
		if rows[m] == nil {
			rows[m] = map[float64]float64{}
		}
		if _, dup := rows[m][k]; !dup {
			rows[m][k] = t.float(row, "latency")
		}
	}
	ks := map[int]bool{}
	for key := range sh.gemm {
		if key[0] == 1 {
			ks[key[2]] = true
		}
	}
	var out []kernels.Quant
	for _, k := range sortedInts(ks) {
		q := kernels.Quant{Op: op, K: k}
		for _, s := range seriesOf(rows) { // one per m, ascending
			v, ok := atK(s, float64(k), op == kernels.ScaleMatrix)
			if !ok {
				continue
			}
			q.Curve.X = append(q.Curve.X, s.Key)
			q.Curve.Ms = append(q.Curve.Ms, v)
		}
		if len(q.Curve.X) == 0 {
			return nil, fmt.Errorf("%s: no rows for k %d", op, k)
		}
		out = append(out, q)
	}
	return out, nil
}

// atK reads one m's row (X = k) at k: exact, the straight line between the
// collected k around it, or the nearest boundary (times k over the
// boundary's k when scale).
func atK(s kernels.Series, k float64, scale bool) (float64, bool) {
	x, y := s.X, s.Ms
	if len(x) == 0 {
		return 0, false
	}
	i := sort.SearchFloat64s(x, k)
	switch {
	case i < len(x) && x[i] == k:
		return y[i], true
	case i == 0:
		if scale {
			return y[0] * k / x[0], true
		}
		return y[0], true
	case i < len(x):
		return y[i-1] + (y[i]-y[i-1])*(k-x[i-1])/(x[i]-x[i-1]), true
	}
	last := len(x) - 1
	if scale {
		return y[last] * k / x[last], true
	}
	return y[last], true
}

func sortedInts(m map[int]bool) []int {
	var s []int
	for v := range m {
		s = append(s, v)
	}
	sort.Ints(s)
	return s
}
