package report

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
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

// TestItem34_1CountTokens checks that a pass's tokens recorded with
// TokenUncounted and one CountTokens leave the collector as Token per
// token does: per-request records and the time series, including passes
// that coarsen the series and passes of no token.
func TestItem34_1CountTokens(t *testing.T) {
	for _, tc := range []struct {
		name  string
		step  timing.Time // pass length
		batch int
	}{{"short_passes", timing.FromMs(7), 5}, {"coarsening", timing.FromMs(40_000), 3}, {"empty_and_single", timing.FromMs(13), 1}} {
		t.Run(tc.name, func(t *testing.T) {
			const reqs = 40
			a, b := NewCollector(reqs, 2, false), NewCollector(reqs, 2, false)
			for id := uint64(1); id <= reqs; id++ {
				a.Arrive(id, 0, 10, 100)
				b.Arrive(id, 0, 10, 100)
			}
			rng := rand.New(rand.NewPCG(34, 5))
			now := timing.Time(0)
			for range 400 {
				end := now + tc.step
				var ids []uint64
				for range rng.IntN(tc.batch + 1) {
					ids = append(ids, 1+uint64(rng.IntN(reqs)))
				}
				for _, id := range ids {
					a.Token(id, now, end)
					b.TokenUncounted(id, now, end)
				}
				b.CountTokens(end, len(ids))
				now = end
			}
			if !reflect.DeepEqual(a.recs, b.recs) || !reflect.DeepEqual(a.Series, b.Series) {
				t.Fatalf("collectors differ:\nToken       %+v\nuncounted   %+v", a.Series.buckets[:3], b.Series.buckets[:3])
			}
			if len(a.Series.buckets) == 0 {
				t.Fatal("no tokens recorded")
			}
		})
	}
}
