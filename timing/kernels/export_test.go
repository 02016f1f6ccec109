package kernels

import "math"

// GenAt is one generation-attention grid point, without the ±10 % averaging.
func GenAt(g *Gen, batch, kv float64) float64 { return g.at(batch, kv) }

// Prepare readies a hand-built table's attention grids, as Decode does.
func Prepare(t *Table) { t.prepare() }

// ContextSOL and GenSOL are the grids' speeds of light (grid.go), in each
// grid's axis order.
func ContextSOL(c *Context, seq, batch float64) float64 { return c.grid.sol(seq, batch) }
func GenSOL(g *Gen, batch, kv float64) float64          { return g.grid.sol(batch, kv) }

// GenFast reports whether Gen.Ms resolves (batch, kv) on its row or
// between-rows fast path (genms.go) rather than point by point.
func GenFast(g *Gen, batch, kv float64) bool {
	sMin := max(1, math.Floor(kv*0.9))
	sMax := max(sMin, math.Floor(kv*1.1))
	i := outerRow(g.Rows, batch)
	if i == len(g.Rows) {
		return false
	}
	if g.Rows[i].Key == batch {
		_, ok := genRow(&g.Rows[i], sMin, sMax)
		return ok
	}
	if i == 0 {
		return false
	}
	_, ok := g.genBetween(i, batch, sMin, sMax)
	return ok
}

// DecodeFast is decodeFast, the table unprepared.
func DecodeFast(b []byte) (*Table, bool) {
	t, ok := decodeFast(b)
	return &t, ok
}

// holdRef is grid.hold before TestItem33_3HoldPrune's pruning (b4aefd3),
// the reference it is checked against.
func holdRef(g *grid, outer, inner float64) (float64, bool) {
	if len(g.leaves) == 0 || g.sol == nil {
		return 0, false
	}
	qo, qi := math.Log2(max(outer, 1e-12)), math.Log2(max(inner, 1e-12))
	// The five nearest (four anchors and the support radius), ascending;
	// a later leaf at an equal distance never displaces an earlier one,
	// as AIC's selection (weights depend on distance alone).
	var best [5]anchor
	n := 0
	for _, l := range g.leaves {
		d := math.Hypot(l.lo-qo, l.li-qi)
		if n == len(best) && d >= best[n-1].d {
			continue
		}
		j := min(n, len(best)-1)
		for j > 0 && best[j-1].d > d {
			best[j] = best[j-1]
			j--
		}
		best[j] = anchor{d, l.util}
		if n < len(best) {
			n++
		}
	}
	return g.sol(outer, inner) / weigh(&best, n), true
}

// HoldBoth is a grid's hold at (outer, inner) and holdRef's; ctx picks
// the context grid, else the generation one.
func HoldBoth(c *Context, g *Gen, outer, inner float64) (got, want float64, ok bool) {
	var gr *grid
	if c != nil {
		gr = &c.grid
	} else {
		gr = &g.grid
	}
	got, ok = gr.hold(outer, inner)
	want, _ = holdRef(gr, outer, inner)
	return got, want, ok
}
