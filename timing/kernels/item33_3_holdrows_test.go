package kernels_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dynosim/dynosim-web/timing/kernels"
)

// TestItem33_3HoldRows: the hold's nearest-first search (grid.go search:
// rows outward from the query, leaves outward in each row, a direction
// left once one axis alone is further than the fifth nearest, ties kept
// by leaf index as AIC's loop keeps them) returns what the unpruned loop
// in leaf order (holdRef) returns bit for bit, on every context and
// generation grid of the 18 tables, at queries built to sit on those
// bounds: on a row's key or a measured length (one axis at distance 0,
// so Hypot is the other axis exactly), halfway between two rows or two
// lengths in log2 (equal distances: the earlier leaf must stay), 1 %
// either side, and past the grid's last row and length; 600 drawn per
// grid with a fixed seed, 600 more anywhere around the grid, and every
// query on a row key past the last length; and on two hand-built grids,
// one whose rows hold one to three points, a lattice with a hole whose
// center has twelve leaves at one distance (ties), at every row key and
// length.
func TestItem33_3HoldRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 3))
	near := func(v []float64, spread []float64) []float64 {
		var out []float64
		for i, x := range v {
			for _, f := range spread {
				out = append(out, x*f)
			}
			if i > 0 {
				out = append(out, math.Sqrt(v[i-1]*x))
			}
		}
		last := v[len(v)-1]
		return append(out, last*1.1, last*1.5, last*2, last*4, last*16)
	}
	spread := []float64{1, 1.01, 1 / 1.01, math.Sqrt2}
	checked := 0
	check := func(key string, c *kernels.Context, g *kernels.Gen, o, in float64) {
		got, want, ok := kernels.HoldBoth(c, g, o, in)
		if ok && math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%s: hold(%v, %v) = %v, unpruned %v", key, o, in, got, want)
		}
		checked++
	}
	// A hand-built table whose rows hold one to three points, so that the
	// fifth anchor is found only a few rows in (no skip before it).
	sparse := &kernels.Table{Format: kernels.Format, Peak: kernels.Peak{BF16FLOPS: 1e15, MemBW: 3e12}}
	var sparseRows []kernels.Series
	for i, k := range []float64{1, 2, 4, 8, 16, 64, 256} {
		r := kernels.Series{Key: k}
		for j := range i%3 + 1 {
			r.X = append(r.X, float64(int(64)<<(2*j+i%2)))
			r.Ms = append(r.Ms, 0.01*float64(j+1)*(1+float64(i)/4))
		}
		sparseRows = append(sparseRows, r)
	}
	sparse.Context = []kernels.Context{{Heads: 32, KVHeads: 8, HeadDim: 128, KVDType: "bf16", Rows: sparseRows}}
	sparse.Generation = []kernels.Gen{{Heads: 32, KVHeads: 8, HeadDim: 128, KVDType: "bf16", Rows: sparseRows}}
	// A hand-built 16 × 16 lattice in log2 space without the points
	// closer than 5 to (2^7, 2^7): a query there has twelve leaves at
	// distance 5 (four of them on its axes), so the five kept, and the
	// anchors equally weighted on the radius, are the ones with the
	// lowest index, which the search meets last.
	lattice := &kernels.Table{Format: kernels.Format, Peak: kernels.Peak{BF16FLOPS: 1e15, MemBW: 3e12}}
	var latticeRows []kernels.Series
	for i := range 16 {
		r := kernels.Series{Key: math.Exp2(float64(i))}
		for j := range 16 {
			if (i-7)*(i-7)+(j-7)*(j-7) >= 25 {
				r.X = append(r.X, math.Exp2(float64(j)))
				r.Ms = append(r.Ms, 0.01*(1+0.1*float64(i)+0.03*float64(j)))
			}
		}
		latticeRows = append(latticeRows, r)
	}
	lattice.Context = []kernels.Context{{Heads: 32, KVHeads: 8, HeadDim: 128, KVDType: "bf16", Rows: latticeRows}}
	lattice.Generation = []kernels.Gen{{Heads: 32, KVHeads: 8, HeadDim: 128, KVDType: "bf16", Rows: latticeRows}}
	kernels.Prepare(lattice)
	tables := loadAll(t)
	tables["hand-built sparse rows"] = sparse
	tables["hand-built lattice with a hole"] = lattice
	for key, tb := range tables {
		grids := len(tb.Context) + len(tb.Generation)
		for i := range grids {
			var c *kernels.Context
			var g *kernels.Gen
			var rows []kernels.Series
			if i < len(tb.Context) {
				c = &tb.Context[i]
				rows = c.Rows
			} else {
				g = &tb.Generation[i-len(tb.Context)]
				rows = g.Rows
			}
			var keys, xs []float64
			seen := map[float64]bool{}
			for _, r := range rows {
				keys = append(keys, r.Key)
				for _, x := range r.X {
					if !seen[x] {
						seen[x] = true
						xs = append(xs, x)
					}
				}
			}
			sortFloats(xs)
			outers, inners := near(keys, spread), near(xs, spread)
			for range 600 {
				check(key, c, g, outers[rng.IntN(len(outers))], inners[rng.IntN(len(inners))])
			}
			// Anywhere from a quarter of the first row and length to 16
			// times the last, log-uniform.
			lo, hi := math.Log2(keys[0]/4), math.Log2(keys[len(keys)-1]*16)
			li, hx := math.Log2(xs[0]/4), math.Log2(xs[len(xs)-1]*16)
			for range 600 {
				check(key, c, g, math.Exp2(lo+(hi-lo)*rng.Float64()), math.Exp2(li+(hx-li)*rng.Float64()))
			}
			for _, k := range keys {
				for _, in := range inners[len(inners)-5:] {
					check(key, c, g, k, in)
				}
				if tb == sparse || tb == lattice {
					for _, x := range xs {
						check(key, c, g, k, x)
					}
				}
			}
		}
	}
	if checked < 1_400_000 {
		t.Fatalf("%d queries", checked)
	}
}

func sortFloats(v []float64) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j-1] > v[j]; j-- {
			v[j-1], v[j] = v[j], v[j-1]
		}
	}
}
