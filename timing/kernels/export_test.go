package kernels

// GenAt is one generation-attention grid point, without the ±10 % averaging.
func GenAt(g *Gen, batch, kv float64) float64 { return g.at(batch, kv) }

// Prepare readies a hand-built table's attention grids, as Decode does.
func Prepare(t *Table) { t.prepare() }

// ContextSOL and GenSOL are the grids' speeds of light (grid.go), in each
// grid's axis order.
func ContextSOL(c *Context, seq, batch float64) float64 { return c.grid.sol(seq, batch) }
func GenSOL(g *Gen, batch, kv float64) float64          { return g.grid.sol(batch, kv) }
