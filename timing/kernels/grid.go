package kernels

import (
	"math"
	"sort"
)

// The attention grids resolve a query as AIC's perf_interp Grid resolver
// does (aic-core/rust/aiconfigurator-core/src/perf_database/
// perf_interp.rs @ 095f58a5, grid_interior and grid_hold; in our words):
//   - inside the grid, bracket the outer axis and resolve the inner axis
//     in each bracketing row: both rows cover the query → blend them
//     (context: in √latency along sequence length; generation: linear);
//     one row covers it → that row's value times SOL(query)/SOL(that row's
//     key), its utilisation held across the outer axis;
//   - past the grid — beyond either axis, or in the corner the collectors
//     truncated (large batch × long sequence) — hold a utilisation
//     transferred from the four measured points nearest in joint
//     log2(outer, inner) space, with tapered modified-Shepard weights
//     w = ((R − d)/(R·d))², R the fifth point's distance, and price
//     SOL(query)/utilisation.
// SOL is AIC's speed of light for the op (attention.rs's
// generation_attention_sol / context_attention_sol @ 095f58a5) on the
// table's peak FLOPS and bandwidth. Differences from AIC: the anchors are
// drawn from the model's own head layout only (AIC's grids also hold other
// head counts, a third log2 axis), and measured points below SOL are not
// raised to it.

// leaf is one measured grid point, prepared for the hold.
type leaf struct {
	lo, li float64 // log2 of the outer and inner key
	util   float64 // SOL / latency
}

// grid is what the hold needs of a Context or Gen, prepared by Decode.
type grid struct {
	leaves []leaf
	rows   []leafRow // the leaves of each row with any, in order
	sol    func(outer, inner float64) float64
}

// leafRow is one measured row's run of leaves, leaves[start:end]: they
// share lo, and their li ascend (a row's X ascends).
type leafRow struct {
	lo         float64
	start, end int
}

// prepare fills a grid's leaves from rows (Key outer, X inner).
func (g *grid) prepare(rows []Series, sol func(outer, inner float64) float64) {
	g.sol = sol
	g.leaves, g.rows = g.leaves[:0], g.rows[:0]
	for _, r := range rows {
		start, lo := len(g.leaves), math.Log2(max(r.Key, 1e-12))
		for i, x := range r.X {
			if s := sol(r.Key, x); s > 0 && r.Ms[i] > 0 && !math.IsInf(s, 0) {
				g.leaves = append(g.leaves, leaf{lo, math.Log2(max(x, 1e-12)), s / r.Ms[i]})
			}
		}
		if len(g.leaves) > start {
			g.rows = append(g.rows, leafRow{lo, start, len(g.leaves)})
		}
	}
}

// hold is SOL(outer, inner) over the utilisation of the four nearest
// measured points (package comment), or ok false with no valid point.
func (g *grid) hold(outer, inner float64) (float64, bool) {
	if len(g.leaves) == 0 || g.sol == nil {
		return 0, false
	}
	qo, qi := math.Log2(max(outer, 1e-12)), math.Log2(max(inner, 1e-12))
	var f nearest5
	if math.Abs(qo) < math.Inf(1) && math.Abs(qi) < math.Inf(1) {
		g.search(&f, qo, qi)
	} else { // NaN or +Inf: every leaf in order, as AIC's loop
		for i, l := range g.leaves {
			f.offer(math.Hypot(l.lo-qo, l.li-qi), i, l.util)
		}
	}
	return g.sol(outer, inner) / weigh(&f.best, f.n), true
}

// nearest5 holds the five nearest leaves so far (four anchors and the
// support radius), ascending by distance, a tie by leaf index: the five
// AIC's loop keeps, whose later leaf at an equal distance never displaces
// an earlier one (weights depend on distance alone), whatever order the
// leaves are offered in. Offered in index order it is that loop, NaN
// distances included (every comparison false: a NaN takes the last slot).
type nearest5 struct {
	best [5]anchor
	idx  [5]int
	n    int
}

func (f *nearest5) offer(d float64, i int, util float64) {
	if f.n == len(f.best) && (d > f.best[4].d || d == f.best[4].d && i > f.idx[4]) {
		return
	}
	j := min(f.n, len(f.best)-1)
	for j > 0 && (f.best[j-1].d > d || f.best[j-1].d == d && f.idx[j-1] > i) {
		f.best[j], f.idx[j] = f.best[j-1], f.idx[j-1]
		j--
	}
	f.best[j], f.idx[j] = anchor{d, util}, i
	if f.n < len(f.best) {
		f.n++
	}
}

// far reports whether every leaf at least d away on one axis is further
// than the fifth nearest (a tie at d may still come first by index).
// Hypot is max(|dx|, |dy|) times a correctly rounded square root of a
// number ≥ 1, never below that max.
func (f *nearest5) far(d float64) bool { return f.n == len(f.best) && d > f.best[4].d }

// search offers the leaves nearest (qo, qi) first (both finite): rows
// outward from qo by |lo − qo|, in each row leaves outward from qi by
// |li − qi|, stopping a direction once that axis alone is further than
// the fifth nearest; a replay asks for points past a grid ~50,000 times,
// where AIC's loop order meets the far leaves first (TestItem33_3HoldRows).
func (g *grid) search(f *nearest5, qo, qi float64) {
	rows := g.rows
	b := sort.Search(len(rows), func(i int) bool { return rows[i].lo >= qo })
	a := b - 1
	for {
		da, db := math.Inf(1), math.Inf(1)
		if a >= 0 {
			da = qo - rows[a].lo
		}
		if b < len(rows) {
			db = rows[b].lo - qo
		}
		r, dr := a, da
		if db < da {
			r, dr = b, db
			b++
		} else if a >= 0 {
			a--
		} else {
			return // both sides done
		}
		if f.far(dr) {
			return // every row left is as far on lo alone
		}
		leaves := g.leaves[rows[r].start:rows[r].end]
		q := sort.Search(len(leaves), func(i int) bool { return leaves[i].li >= qi })
		p := q - 1
		for {
			dp, dq := math.Inf(1), math.Inf(1)
			if p >= 0 {
				dp = qi - leaves[p].li
			}
			if q < len(leaves) {
				dq = leaves[q].li - qi
			}
			k, dk := p, dp
			if dq < dp {
				k, dk = q, dq
				q++
			} else if p >= 0 {
				p--
			} else {
				break
			}
			if f.far(dk) || f.far(dr) {
				break
			}
			l := &leaves[k]
			f.offer(math.Hypot(l.lo-qo, l.li-qi), rows[r].start+k, l.util)
		}
	}
}

// cursor is a row index for lookups at ascending x (Gen.Ms's five
// lengths): from its first binary search on, it walks forward to the
// first point ≥ x, the index sort.SearchFloat64s would return.
type cursor struct {
	i  int
	ok bool // i is set
}

// rowAtCursor is a row's value at x when x lies within its measured
// points, for an x not below the cursor's previous one.
func (s *Series) rowAtCursor(x float64, c *cursor) (float64, bool) {
	if !c.ok {
		c.i, c.ok = sort.SearchFloat64s(s.X, x), true
	}
	for c.i < len(s.X) && s.X[c.i] < x {
		c.i++
	}
	return s.rowAtFrom(x, c.i)
}

// rowAtFrom is rowAtCursor with i the first index of a point ≥ x.
func (s *Series) rowAtFrom(x float64, i int) (float64, bool) {
	switch {
	case i < len(s.X) && s.X[i] == x:
		return s.Ms[i], true
	case i == 0 || i == len(s.X):
		return 0, false
	}
	return lerp(s.X[i-1], s.Ms[i-1], s.X[i], s.Ms[i], x), true
}

// resolve is AIC's grid resolution of (outer, inner) over rows; sqrt
// blends the outer axis in √latency.
func (g *grid) resolve(rows []Series, outer, inner float64, sqrt bool) float64 {
	var c0, c1 cursor
	return g.resolveRow(rows, outerRow(rows, outer), outer, inner, sqrt, &c0, &c1)
}

// outerRow is the first row whose key is ≥ outer.
func outerRow(rows []Series, outer float64) int {
	return sort.Search(len(rows), func(i int) bool { return rows[i].Key >= outer })
}

// resolveRow is resolve with i = outerRow(rows, outer) and the rows
// around it read through cursors (c0: row i−1, c1: row i), so that a
// caller resolving ascending inners at one outer (Gen.Ms) searches each
// row once; the result is resolve's, bit for bit.
func (g *grid) resolveRow(rows []Series, i int, outer, inner float64, sqrt bool, c0, c1 *cursor) float64 {
	switch {
	case i < len(rows) && rows[i].Key == outer:
		if v, ok := rows[i].rowAtCursor(inner, c1); ok {
			return v
		}
	case i > 0 && i < len(rows):
		v0, ok0 := rows[i-1].rowAtCursor(inner, c0)
		v1, ok1 := rows[i].rowAtCursor(inner, c1)
		switch {
		case ok0 && ok1:
			if sqrt {
				r := lerp(rows[i-1].Key, math.Sqrt(v0), rows[i].Key, math.Sqrt(v1), outer)
				return r * r
			}
			return lerp(rows[i-1].Key, v0, rows[i].Key, v1, outer)
		case ok0 || ok1:
			v, k := v0, rows[i-1].Key
			if ok1 {
				v, k = v1, rows[i].Key
			}
			if sq, sk := g.sol(outer, inner), g.sol(k, inner); sq > 0 && sk > 0 {
				return v * sq / sk
			}
			return v
		}
	}
	if v, ok := g.hold(outer, inner); ok {
		return v
	}
	return nearest(rows, outer, inner) // no valid anchor (no SOL): the nearest row's nearest point
}

// nearest is the value of the measured point of the nearest row nearest
// to inner: the last resort of a grid without a speed of light.
func nearest(rows []Series, outer, inner float64) float64 {
	i := sort.Search(len(rows), func(i int) bool { return rows[i].Key >= outer })
	if i == len(rows) || i > 0 && outer-rows[i-1].Key < rows[i].Key-outer {
		i--
	}
	r := &rows[i]
	j := sort.SearchFloat64s(r.X, inner)
	if j == len(r.X) || j > 0 && inner-r.X[j-1] < r.X[j]-inner {
		j--
	}
	return r.Ms[j]
}

// attnFLOPS is the tensor throughput AIC prices attention of a KV dtype
// with: FP8 MMA for an fp8 cache where the GPU has it (attention.rs,
// generation_attn_mode), else BF16.
func attnFLOPS(p Peak, kvDType string) float64 {
	if kvDType == "fp8" && p.FP8FLOPS > 0 {
		return p.FP8FLOPS
	}
	return p.BF16FLOPS
}

func kvBytes(kvDType string) float64 {
	if kvDType == "fp8" {
		return 1
	}
	return 2
}

// prepare readies the generation grid: SOL over (batch, KV length) as
// AIC's generation_attention_sol (one query token per sequence reading
// s − 1 cached tokens).
func (g *Gen) prepare(p Peak) {
	n, nkv, h := float64(g.Heads), float64(g.KVHeads), float64(g.HeadDim)
	f, e := attnFLOPS(p, g.KVDType), kvBytes(g.KVDType)
	g.grid.prepare(g.Rows, func(b, s float64) float64 {
		kv := s - 1
		ops := 2 * b * n * h * 2 * kv
		mem := b * (n*h*2 + 2*nkv*kv*h*e + n*h*2)
		return 1000 * max(ops/f, mem/p.MemBW)
	})
}

// prepare readies the context grid: SOL over (sequence length, batch) as
// AIC's context_attention_sol (causal, full window; attention in BF16,
// the rows the tables keep).
func (c *Context) prepare(p Peak) {
	n, nkv, h := float64(c.Heads), float64(c.KVHeads), float64(c.HeadDim)
	e := kvBytes(c.KVDType)
	c.grid.prepare(c.Rows, func(s, b float64) float64 {
		ops := 2 * b * s * s * n * h * 2 / 2
		mem := 2*b*(n*s*h+n*s*h) + e*b*2*nkv*s*h
		return 1000 * max(ops/p.BF16FLOPS, mem/p.MemBW)
	})
}

// prepare readies every attention grid of the table for queries.
func (t *Table) prepare() {
	for i := range t.Context {
		t.Context[i].prepare(t.Peak)
	}
	for i := range t.Generation {
		t.Generation[i].prepare(t.Peak)
	}
}

// anchor is a measured point near a query: its distance in log2 space
// and its utilisation.
type anchor struct{ d, u float64 }

// weigh is the utilisation at a query from its n ≤ 5 nearest points,
// ascending (hold): the four nearest weighted by AIC's inverse-distance
// kernel with the fifth's distance as the support radius, or by 1/d²
// with fewer than five; equal weights when every anchor lies on the radius.
func weigh(best *[5]anchor, n int) float64 {
	anchors, r := n, math.Inf(1)
	if n == len(best) {
		anchors, r = 4, best[4].d
	}
	var wsum, usum float64
	for _, a := range best[:anchors] {
		var w float64
		if math.IsInf(r, 1) {
			w = 1 / (a.d*a.d + 1e-12)
		} else {
			t := max(r-a.d, 0) / (r*a.d + 1e-12)
			w = t * t
		}
		wsum += w
		usum += w * a.u
	}
	if wsum <= 0 { // every anchor on the support radius: equal weights
		wsum, usum = 0, 0
		for _, a := range best[:anchors] {
			wsum++
			usum += a.u
		}
	}
	return usum / wsum
}
