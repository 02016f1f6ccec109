package report

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestItem34_1SketchIndex checks sketchIndex, the sketch's bucket by a
// product, against the ceiling of the quotient it replaces: on bucket
// edges (k·γ and their float neighbours), the logarithms of random
// inter-token gaps and per-user rates, and values past its fast range.
func TestItem34_1SketchIndex(t *testing.T) {
	var lgs []float64
	for k := -3000; k <= 30000; k++ {
		e := float64(float64(k) * sketchLogGamma)
		lgs = append(lgs, e, math.Nextafter(e, math.Inf(1)), math.Nextafter(e, math.Inf(-1)),
			math.Nextafter(math.Nextafter(e, math.Inf(1)), math.Inf(1)), math.Nextafter(math.Nextafter(e, math.Inf(-1)), math.Inf(-1)))
	}
	rng := rand.New(rand.NewPCG(34, 3))
	for range 1_000_000 {
		ms := math.Ldexp(1+rng.Float64(), rng.IntN(40)-20)
		lgs = append(lgs, math.Log(ms), log1000-math.Log(ms))
	}
	lgs = append(lgs, 0, math.Copysign(0, -1), 1<<20*sketchLogGamma, -(1<<20)*sketchLogGamma, 1e9, -1e9, 700, -745)
	for _, lg := range lgs {
		if got, want := sketchIndex(lg), int(math.Ceil(lg/sketchLogGamma)); got != want {
			t.Fatalf("sketchIndex(%v) = %d, the quotient's ceiling is %d", lg, got, want)
		}
	}
}
