package planner

import (
	"math"
	"slices"
)

// Load-based scaling's pass-time models: least-squares fits of a pass's
// wall time over its forward-pass metrics (Dynamo's FPM regressions),
// from a bounded window of passes per worker.

// sample is one pass: its prefill tokens (x1), decode KV tokens (x2) and
// how long it took (y, ms). seq (from 1) orders samples by arrival; trim
// marks the ones it drops with 0.
type sample struct {
	x1, x2, y float64
	seq       uint64
	at        float64 // when the pass ended, ms: the horizon retires it
}

// window is a worker's kept passes.
type window struct {
	worker  int
	samples []sample
	take    int // passes of this tick taken (ingest)
	// trim's buffers: per-bucket counts, each sample's bucket, and the
	// samples grouped by bucket.
	tally            []tally
	of, start, order []int32
}

// tally is one bucket's samples left and how many of it are gone.
type tally struct {
	n, oldest int
}

// keep adds s to w and retires samples beyond limit. Retirement is bucketed
// (fpm_sample_bucket_size): the kept passes' range of the regression
// inputs is cut into buckets (B of them over x in one dimension, √B × √B
// in two), and the oldest pass of the fullest bucket goes (ties: the
// bucket whose oldest pass is oldest). A plain FIFO would let a steady
// load fill the window with one x value and leave the fit no slope to
// learn; the buckets keep the load levels seen apart. With all passes in
// one bucket it is FIFO.
func (w *window) keep(s sample, limit, buckets int, r role) {
	w.samples = append(w.samples, s)
	w.trim(limit, buckets, r)
}

// trim retires samples beyond limit, oldest of the fullest bucket first
// (see keep), in one pass: the buckets are cut over the range of the
// samples before any goes, which a tick's batch of passes shares.
func (w *window) trim(limit, buckets int, r role) {
	extra := len(w.samples) - limit
	if extra <= 0 {
		return
	}
	side := buckets
	if r == aggregated {
		side = isqrt(buckets)
	}
	lo1, hi1, lo2, hi2 := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range w.samples {
		lo1, hi1 = min(lo1, s.x1), max(hi1, s.x1)
		lo2, hi2 = min(lo2, s.x2), max(hi2, s.x2)
	}
	cell := func(x, lo, hi float64) int {
		if hi <= lo {
			return 0
		}
		return min(int(float64(side)*((x-lo)/(hi-lo))), side-1)
	}
	bucket := func(s sample) int {
		switch r {
		case prefill:
			return cell(s.x1, lo1, hi1)
		case decode:
			return cell(s.x2, lo2, hi2)
		}
		return cell(s.x1, lo1, hi1)*side + cell(s.x2, lo2, hi2)
	}
	nb := side * side
	counts := slices.Grow(w.tally[:0], nb)[:nb]
	w.tally = counts
	for i := range counts {
		counts[i] = tally{}
	}
	// Each bucket's samples in arrival order: a counting sort into order,
	// bucket b's at order[start[b]:], its next oldest at start[b]+taken.
	w.of = slices.Grow(w.of[:0], len(w.samples))[:len(w.samples)]
	for i, s := range w.samples {
		b := bucket(s)
		w.of[i] = int32(b)
		counts[b].n++
	}
	w.start = slices.Grow(w.start[:0], nb+1)[:nb+1]
	w.start[0] = 0
	for b := range nb {
		w.start[b+1] = w.start[b] + int32(counts[b].n)
	}
	w.order = slices.Grow(w.order[:0], len(w.samples))[:len(w.samples)]
	fill := slices.Clone(w.start[:nb])
	for i, b := range w.of {
		w.order[fill[b]] = int32(i)
		fill[b]++
	}
	for range extra {
		best := -1
		for b := range nb {
			t := &counts[b]
			if t.n == 0 {
				continue
			}
			if best < 0 || t.n > counts[best].n || (t.n == counts[best].n && w.order[w.start[b]+int32(t.oldest)] < w.order[w.start[best]+int32(counts[best].oldest)]) {
				best = b
			}
		}
		t := &counts[best]
		w.samples[w.order[w.start[best]+int32(t.oldest)]].seq = 0 // marked: no kept sample has seq 0
		t.oldest++                                                // here: how many of the bucket are gone
		t.n--
	}
	w.samples = slices.DeleteFunc(w.samples, func(s sample) bool { return s.seq == 0 })
}

// linFit is the model y ≈ a + b·x1 + c·x2 with a, b, c ≥ 0 (a pass never
// gets faster with more work; a negative intercept or slope is noise).
type linFit struct{ a, b, c float64 }

// at is the model at (x1, x2), never negative. Products are converted
// explicitly so no CPU fuses them into a multiply-add.
func (f linFit) at(x1, x2 float64) float64 {
	return max(f.a+float64(f.b*x1)+float64(f.c*x2), 0)
}

// fit1 fits y ≈ a + b·x by least squares over the points (x of each
// sample taken by x). Degenerate inputs are guarded:
//   - no points: the zero model;
//   - x (nearly) constant, so the slope is not determined: the
//     proportional model y = (ȳ/x̄)·x (a pass costs its share of the
//     observed mean time per token), or y = ȳ when x̄ = 0;
//   - a negative slope: the mean, y = ȳ;
//   - a negative intercept: the fit through the origin, b = Σxy/Σx².
func fit1(ss []sample, x func(sample) float64) linFit {
	n := float64(len(ss))
	if n == 0 {
		return linFit{}
	}
	var mx, my float64
	for _, s := range ss {
		mx += x(s)
		my += s.y
	}
	mx, my = mx/n, my/n
	var sxx, sxy float64
	for _, s := range ss {
		dx := x(s) - mx
		sxx += float64(dx * dx)
		sxy += float64(dx * (s.y - my))
	}
	if sxx <= 1e-12*n*max(1, float64(mx*mx)) {
		if mx > 0 {
			return linFit{b: my / mx}
		}
		return linFit{a: my}
	}
	b := sxy / sxx
	if b <= 0 {
		return linFit{a: my}
	}
	a := my - float64(b*mx)
	if a >= 0 {
		return linFit{a: a, b: b}
	}
	var sx2, sxy0 float64
	for _, s := range ss {
		sx2 += float64(x(s) * x(s))
		sxy0 += float64(x(s) * s.y)
	}
	return linFit{b: sxy0 / sx2}
}

// fitPrefill is the prefill pool's model: pass time over prefill tokens.
func fitPrefill(ss []sample) linFit { return fit1(ss, func(s sample) float64 { return s.x1 }) }

// fitDecode is the decode pool's model: pass time over decode KV tokens.
func fitDecode(ss []sample) linFit {
	f := fit1(ss, func(s sample) float64 { return s.x2 })
	return linFit{a: f.a, c: f.b}
}

// fit2 is the aggregated pool's model, y ≈ a + b·x1 + c·x2, solved from
// the centred normal equations (Cramer's rule on the 2×2 covariance
// matrix). When the matrix is (nearly) singular, or a coefficient comes
// out negative, it falls back to the better (smaller squared error) of
// the two one-input fits, preferring prefill tokens on a tie.
func fit2(ss []sample) linFit {
	n := float64(len(ss))
	if n == 0 {
		return linFit{}
	}
	var m1, m2, my float64
	for _, s := range ss {
		m1 += s.x1
		m2 += s.x2
		my += s.y
	}
	m1, m2, my = m1/n, m2/n, my/n
	var s11, s22, s12, s1y, s2y float64
	for _, s := range ss {
		d1, d2, dy := s.x1-m1, s.x2-m2, s.y-my
		s11 += float64(d1 * d1)
		s22 += float64(d2 * d2)
		s12 += float64(d1 * d2)
		s1y += float64(d1 * dy)
		s2y += float64(d2 * dy)
	}
	det := float64(s11*s22) - float64(s12*s12)
	if s11 > 0 && s22 > 0 && det > 1e-9*float64(s11*s22) {
		b := (float64(s22*s1y) - float64(s12*s2y)) / det
		c := (float64(s11*s2y) - float64(s12*s1y)) / det
		a := my - float64(b*m1) - float64(c*m2)
		if a >= 0 && b >= 0 && c >= 0 {
			return linFit{a: a, b: b, c: c}
		}
	}
	p, d := fitPrefill(ss), fitDecode(ss)
	if sse(ss, d) < sse(ss, p) {
		return d
	}
	return p
}

// sse is f's squared error over ss.
func sse(ss []sample, f linFit) float64 {
	var e float64
	for _, s := range ss {
		r := s.y - f.at(s.x1, s.x2)
		e += float64(r * r)
	}
	return e
}
