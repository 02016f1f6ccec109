package kernels

import (
	"math"
	"sort"
)

// genBetween is Gen.Ms's common case, a batch strictly between two
// measured batch rows whose rows both cover all five lengths, done with
// the work shared between the ten row lookups hoisted out of them: the
// batch's blend fraction (outer − k0)/(k1 − k0) once rather than once a
// length, and a length's fraction along a segment once for both rows when
// the rows' segment ends are the same numbers (AIC's generation grids
// measure every batch at the same KV lengths, the large batches at a
// prefix of them). Every latency is the same float64 expression lerp
// evaluates, with the same operands, so the sum is resolveRow's bit for
// bit (TestItem33_3GenBetween); ok is false where it does not apply
// (a row misses a length: the hold), and Ms resolves as before.
func (g *Gen) genBetween(i int, batch, sMin, sMax float64) (sum float64, ok bool) {
	r0, r1 := &g.Rows[i-1], &g.Rows[i]
	x0, y0, x1, y1 := r0.X, r0.Ms, r1.X, r1.Ms
	// Written so that a NaN length fails it.
	if len(x0) == 0 || len(x1) == 0 || !(sMin >= x0[0] && sMin >= x1[0] && sMax <= x0[len(x0)-1] && sMax <= x1[len(x1)-1]) {
		return 0, false
	}
	t := (batch - r0.Key) / (r1.Key - r0.Key)
	j0 := sort.SearchFloat64s(x0, sMin)
	j1 := sort.SearchFloat64s(x1, sMin)
	for j := range 5 {
		s := sMin + math.Floor((sMax-sMin)*float64(j)/4)
		for x0[j0] < s { // in range: s ≤ sMax ≤ the last point
			j0++
		}
		for x1[j1] < s {
			j1++
		}
		var v0, v1 float64
		switch {
		case x0[j0] == s:
			v0 = y0[j0]
			if x1[j1] == s {
				v1 = y1[j1]
			} else {
				v1 = y1[j1-1] + (y1[j1]-y1[j1-1])*((s-x1[j1-1])/(x1[j1]-x1[j1-1]))
			}
		case x1[j1] == s:
			v0 = y0[j0-1] + (y0[j0]-y0[j0-1])*((s-x0[j0-1])/(x0[j0]-x0[j0-1]))
			v1 = y1[j1]
		default:
			// s lies strictly inside a segment of each row (j ≥ 1: the
			// first point is ≤ sMin ≤ s and < s here).
			f := (s - x0[j0-1]) / (x0[j0] - x0[j0-1])
			v0 = y0[j0-1] + (y0[j0]-y0[j0-1])*f
			if x1[j1-1] != x0[j0-1] || x1[j1] != x0[j0] {
				f = (s - x1[j1-1]) / (x1[j1] - x1[j1-1])
			}
			v1 = y1[j1-1] + (y1[j1]-y1[j1-1])*f
		}
		sum += v0 + (v1-v0)*t
	}
	return sum, true
}

// genRow is Gen.Ms at a batch that is a measured row's key (the usual
// decode batch of a lightly loaded replica: 87 % of the conversation
// replay's generation-attention queries), when the row covers all five
// lengths: each length's latency is the row's measured point or rowAtFrom's
// lerp, the same float64, summed in the same order.
func genRow(r *Series, sMin, sMax float64) (sum float64, ok bool) {
	x, y := r.X, r.Ms
	if len(x) == 0 || !(sMin >= x[0] && sMax <= x[len(x)-1]) { // NaN fails
		return 0, false
	}
	i := 0
	for x[i] < sMin { // in range: sMin ≤ sMax ≤ the last point
		i++
	}
	for j := range 5 {
		s := sMin + math.Floor((sMax-sMin)*float64(j)/4)
		for x[i] < s { // in range: s ≤ sMax ≤ the last point
			i++
		}
		if x[i] == s {
			sum += y[i]
		} else { // i ≥ 1: the first point is ≤ sMin ≤ s and < s here
			sum += y[i-1] + (y[i]-y[i-1])*((s-x[i-1])/(x[i]-x[i-1]))
		}
	}
	return sum, true
}
