package kernels

// GenAt is one generation-attention grid point, without the ±10 % averaging.
func GenAt(g *Gen, batch, kv float64) float64 { return g.at(batch, kv) }
