package kernels

import (
	"math"
	"sort"
)

// Ms is the latency in milliseconds of the GEMM over m tokens (package
// doc: straight lines between measured m, the utilisation of the last
// three points held beyond them, the first point's latency held below).
func (g *GEMM) Ms(m float64, p Peak) float64 {
	x, y := g.M, g.Lat
	i := sort.SearchFloat64s(x, m)
	switch {
	case i < len(x) && x[i] == m:
		return y[i]
	case i == 0:
		return y[0]
	case i < len(x):
		return lerp(x[i-1], y[i-1], x[i], y[i], m)
	}
	// Beyond the sweep: hold the median utilisation of the last three.
	var u [3]float64
	n := 0
	for j := len(x) - 1; j >= 0 && n < 3; j-- {
		u[n] = g.SOL(x[j], p) / y[j]
		n++
	}
	return g.SOL(m, p) / median(u[:n])
}

// SOL is the GEMM's speed of light in ms: its FLOPs at the dtype's peak or
// its operand bytes at the memory bandwidth, whichever is longer.
func (g *GEMM) SOL(m float64, p Peak) float64 {
	peak, elem := p.BF16FLOPS, 2.0
	if g.DType == "fp8" && p.FP8FLOPS > 0 {
		peak, elem = p.FP8FLOPS, 1
	}
	n, k := float64(g.N), float64(g.K)
	flops := 2 * m * n * k
	bytes := (m*k+n*k)*elem + m*n*2
	return 1000 * max(flops/peak, bytes/p.MemBW)
}

// AICSOL is AIC's speed of light of the GEMM in ms (aic-core/rust/
// aiconfigurator-core/src/perf_database/gemm.rs gemm_sol_with_flops @
// 095f58a5): its FLOPs at the dtype's tensor peak or (mn + mk + nk)
// elements of the dtype's size at the memory bandwidth, whichever is
// longer (SOL above counts the output at two bytes). AIC raises every
// measured point below it to it when it loads a table
// (clamp_gemm_grids_to_sol, after Python GEMM._correct_sol), which
// tools/aictables does at compile time: a back-to-back benchmark of a
// GEMM whose weights stay in L2 (L40S, RTX PRO 6000) can beat HBM.
func (g *GEMM) AICSOL(m float64, p Peak) float64 {
	peak, elem := p.BF16FLOPS, 2.0
	if g.DType == "fp8" && p.FP8FLOPS > 0 {
		peak, elem = p.FP8FLOPS, 1
	}
	n, k := float64(g.N), float64(g.K)
	return 1000 * max(2*m*n*k/peak, elem*(m*n+m*k+n*k)/p.MemBW)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func lerp(x0, y0, x1, y1, x float64) float64 {
	return y0 + (y1-y0)*((x-x0)/(x1-x0))
}

// at evaluates a row at x: straight lines between points, the first
// point's latency held below them, and beyond the last the latency grows
// as grow(x)/grow(last) (its utilisation held).
func (s *Series) at(x float64, grow func(float64) float64) float64 {
	i := sort.SearchFloat64s(s.X, x)
	switch {
	case i < len(s.X) && s.X[i] == x:
		return s.Ms[i]
	case i == 0:
		return s.Ms[0]
	case i < len(s.X):
		return lerp(s.X[i-1], s.Ms[i-1], s.X[i], s.Ms[i], x)
	}
	last := len(s.X) - 1
	return s.Ms[last] * grow(x) / grow(s.X[last])
}

func identity(x float64) float64 { return x }

// Ms is one layer's context attention over batch sequences of seq new
// tokens each, none cached (package doc; the caller scales for a prefix),
// resolved on the grid as AIC does (grid.go).
func (c *Context) Ms(batch, seq float64) float64 {
	return c.grid.resolve(c.Rows, seq, batch, true)
}

// Ms is one layer's generation attention over batch sequences holding kv
// tokens each on average: the mean of five grid points at lengths spread
// ±10 % around kv, AIC's smoothing of a decode batch's drifting lengths,
// each resolved on the grid as AIC does (grid.go). A replay asks for it on
// every decode pass, so the batch's rows are found once and each is
// searched once for the five ascending lengths (resolveRow): the same
// points as five calls of at, summed in the same order. At a measured
// batch, or between two rows that both cover the five lengths, genRow and
// genBetween (genms.go) do it with the shared work hoisted, bit for bit.
func (g *Gen) Ms(batch, kv float64) float64 {
	sMin := max(1, math.Floor(kv*0.9))
	sMax := max(sMin, math.Floor(kv*1.1))
	i := 0 // outerRow, scanning up from the small batches a replay mostly runs
	for i < len(g.Rows) && !(g.Rows[i].Key >= batch) {
		i++
	}
	if i < len(g.Rows) {
		var sum float64
		ok := false
		if g.Rows[i].Key == batch {
			sum, ok = genRow(&g.Rows[i], sMin, sMax)
		} else if i > 0 {
			sum, ok = g.genBetween(i, batch, sMin, sMax)
		}
		if ok {
			return sum / 5
		}
	}
	var c0, c1 cursor
	var sum float64
	for j := range 5 {
		sum += g.grid.resolveRow(g.Rows, i, batch, sMin+math.Floor((sMax-sMin)*float64(j)/4), false, &c0, &c1)
	}
	return sum / 5
}

// at is one grid point of the generation grid, without the averaging.
func (g *Gen) at(batch, kv float64) float64 { return g.grid.resolve(g.Rows, batch, kv, false) }
