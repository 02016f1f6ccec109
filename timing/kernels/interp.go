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
func square(x float64) float64   { return x * x }

// bracket finds the rows around key: lo == hi when key is outside the rows
// or exactly on one.
func bracket(rows []Series, key float64) (lo, hi int) {
	i := sort.Search(len(rows), func(i int) bool { return rows[i].Key >= key })
	switch {
	case i == len(rows):
		return i - 1, i - 1
	case rows[i].Key == key || i == 0:
		return i, i
	}
	return i - 1, i
}

// Ms is one layer's context attention over batch sequences of seq new
// tokens each, none cached (package doc; the caller scales for a prefix).
func (c *Context) Ms(batch, seq float64) float64 {
	lo, hi := bracket(c.Rows, seq)
	v0 := c.Rows[lo].at(batch, identity)
	var ms float64
	switch {
	case lo != hi:
		v1 := c.Rows[hi].at(batch, identity)
		r0, r1 := math.Sqrt(v0), math.Sqrt(v1)
		r := lerp(c.Rows[lo].Key, r0, c.Rows[hi].Key, r1, seq)
		ms = r * r
	case seq > c.Rows[lo].Key: // beyond the longest sequence: FLOPs ∝ seq²
		ms = v0 * square(seq) / square(c.Rows[lo].Key)
	default:
		ms = v0
	}
	return ms
}

// Ms is one layer's generation attention over batch sequences holding kv
// tokens each on average, averaged over five lengths within ±10 %. The
// blend over batch is linear, so the average of the five blended points
// is the blend of each row's five-point average, which a replay asks for
// on every decode pass: each row is searched once.
func (g *Gen) Ms(batch, kv float64) float64 {
	sMin := max(1, math.Floor(kv*0.9))
	sMax := max(sMin, math.Floor(kv*1.1))
	var s [5]float64
	for i := range s {
		s[i] = sMin + math.Floor((sMax-sMin)*float64(i)/4)
	}
	lo, hi := bracket(g.Rows, batch)
	v0 := g.Rows[lo].mean5(&s)
	switch {
	case lo != hi:
		return lerp(g.Rows[lo].Key, v0, g.Rows[hi].Key, g.Rows[hi].mean5(&s), batch)
	case batch > g.Rows[lo].Key: // beyond the largest batch: bytes ∝ batch
		return v0 * batch / g.Rows[lo].Key
	}
	return v0
}

// mean5 is the row's mean over five ascending lengths (at, with the
// latency ∝ length beyond the last point), searching the row once.
func (s *Series) mean5(xs *[5]float64) float64 {
	i := sort.SearchFloat64s(s.X, xs[0])
	last := len(s.X) - 1
	var sum float64
	for _, x := range xs {
		for i <= last && s.X[i] < x {
			i++
		}
		switch {
		case i <= last && s.X[i] == x:
			sum += s.Ms[i]
		case i == 0:
			sum += s.Ms[0]
		case i <= last:
			sum += lerp(s.X[i-1], s.Ms[i-1], s.X[i], s.Ms[i], x)
		default:
			sum += s.Ms[last] * x / s.X[last]
		}
	}
	return sum / 5
}

// at is one grid point of the generation grid, without the averaging.
func (g *Gen) at(batch, kv float64) float64 {
	lo, hi := bracket(g.Rows, batch)
	v0 := g.Rows[lo].at(kv, identity)
	switch {
	case lo != hi:
		return lerp(g.Rows[lo].Key, v0, g.Rows[hi].Key, g.Rows[hi].at(kv, identity), batch)
	case batch > g.Rows[lo].Key: // beyond the largest batch: bytes ∝ batch
		return v0 * batch / g.Rows[lo].Key
	}
	return v0
}
