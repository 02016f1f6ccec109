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
