package kernels_test

import (
	"math"
	"testing"

	"github.com/dynosim/dynosim-web/timing/kernels"
)

// TestItem33_3HoldPrune: the attention grids' hold (grid.go), which skips
// a leaf whose nearer axis alone is as far as the fifth nearest so far
// without computing its Hypot, returns what the unpruned loop (holdRef,
// b4aefd3) returns bit for bit, on every context and generation grid of
// every table, at queries inside, beside and far past each grid.
func TestItem33_3HoldPrune(t *testing.T) {
	outers := []float64{0, 0.5, 1, 1.5, 3, 17, 64, 100, 700, 4096, 9000, 1e5, 3e6, math.Inf(1), math.NaN()}
	var inners []float64
	for x := 0.7; x < 3e6; x *= 1.63 {
		inners = append(inners, x, math.Round(x))
	}
	inners = append(inners, 0, math.Inf(1), math.NaN())
	checked := 0
	for key, tb := range loadAll(t) {
		for name, grids := range map[string]int{"context": len(tb.Context), "generation": len(tb.Generation)} {
			for i := range grids {
				var c *kernels.Context
				var g *kernels.Gen
				if name == "context" {
					c = &tb.Context[i]
				} else {
					g = &tb.Generation[i]
				}
				for _, o := range outers {
					for _, in := range inners {
						got, want, ok := kernels.HoldBoth(c, g, o, in)
						if ok && math.Float64bits(got) != math.Float64bits(want) {
							t.Fatalf("%s %s grid %d: hold(%g, %g) = %v, unpruned %v", key, name, i, o, in, got, want)
						}
						checked++
					}
				}
			}
		}
	}
	if checked < 500000 {
		t.Fatalf("%d queries", checked)
	}
}
