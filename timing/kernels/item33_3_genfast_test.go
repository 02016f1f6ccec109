package kernels_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/timing/kernels"
)

// genFiveAt is Gen.Ms by definition: the mean of five independent grid
// resolutions (AIC's resolver per point) at lengths spread ±10 % around kv.
func genFiveAt(g *kernels.Gen, b, kv float64) float64 {
	sMin := max(1, math.Floor(kv*0.9))
	sMax := max(sMin, math.Floor(kv*1.1))
	var sum float64
	for j := range 5 {
		sum += kernels.GenAt(g, b, sMin+math.Floor((sMax-sMin)*float64(j)/4))
	}
	return sum / 5
}

// genQueries are the (batch, kv) points TestItem33_3GenFastPaths asks a
// grid: every row's key and points between and beyond rows, against KV
// lengths on, beside and between every measured length, a geometric
// sweep with fractional means, and the degenerate ones.
func genQueries(g *kernels.Gen) (batches, kvs []float64) {
	for i, r := range g.Rows {
		batches = append(batches, r.Key, r.Key+0.5)
		if i > 0 {
			batches = append(batches, (r.Key+g.Rows[i-1].Key)/2)
		}
		for _, x := range r.X {
			kvs = append(kvs, x, x+1, x/0.9+0.5)
		}
	}
	batches = append(batches, 0.5, 3, 1e4)
	for kv := 1.0; kv < 3e5; kv *= 3.1 {
		kvs = append(kvs, kv, kv+0.37)
	}
	slices.Sort(batches)
	slices.Sort(kvs)
	// NaN last: slices.Compact would keep it, Sort puts it first.
	return slices.Compact(batches), append(slices.Compact(kvs), 0, 0.5, math.Inf(1), math.NaN())
}

// TestItem33_3GenFastPaths: Gen.Ms's row and between-rows fast paths
// (genms.go: the blend fraction hoisted, a segment's fraction shared by
// both rows) equal the mean of five independent grid resolutions bit for
// bit on every generation grid of every table and on hand-built grids
// whose rows measure different lengths (no shared segment), and they do
// take most of the queries inside the grids.
func TestItem33_3GenFastPaths(t *testing.T) {
	grids := map[string]*kernels.Gen{}
	for key, tb := range loadAll(t) {
		for gi := range tb.Generation {
			g := &tb.Generation[gi]
			grids[fmt.Sprintf("%s gen %d/%d/%d %s", key, g.Heads, g.KVHeads, g.HeadDim, g.KVDType)] = g
		}
	}
	// Rows at different lengths: row 2 ends inside row 1's last segment,
	// row 8's segments straddle row 2's.
	odd := &kernels.Table{Format: kernels.Format, Peak: kernels.Peak{BF16FLOPS: 1e15, MemBW: 3e12},
		Generation: []kernels.Gen{{Heads: 32, KVHeads: 8, HeadDim: 128, KVDType: "bf16", Rows: []kernels.Series{
			{Key: 1, X: []float64{2, 64, 1000, 5000}, Ms: []float64{0.01, 0.012, 0.03, 0.09}},
			{Key: 2, X: []float64{3, 64, 700, 3000}, Ms: []float64{0.011, 0.013, 0.029, 0.07}},
			{Key: 8, X: []float64{2, 100, 900, 4000, 9000}, Ms: []float64{0.02, 0.021, 0.05, 0.15, 0.31}},
		}}}}
	kernels.Prepare(odd)
	grids["hand-built odd lengths"] = &odd.Generation[0]
	fast, all := 0, 0
	for name, g := range grids {
		batches, kvs := genQueries(g)
		gridFast := 0
		for _, b := range batches {
			for _, kv := range kvs {
				got, want := g.Ms(b, kv), genFiveAt(g, b, kv)
				if math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("%s: Ms(%g, %g) = %v, five resolutions %v", name, b, kv, got, want)
				}
				if kernels.GenFast(g, b, kv) {
					gridFast++
				}
				all++
			}
		}
		if gridFast == 0 {
			t.Errorf("%s: no query took a fast path", name)
		}
		fast += gridFast
	}
	if all < 100000 || fast < all/4 {
		t.Fatalf("%d queries, %d on the fast paths", all, fast)
	}
	t.Logf("%d queries on %d grids, %d on the fast paths", all, len(grids), fast)
}
