package kernels_test

import (
	"math"
	"testing"

	"github.com/dynosim/dynosim-web/timing/kernels"
)

// TestItem33_3GenMsOneSearch: Gen.Ms, which finds the batch's rows once
// and walks each row once for its five ±10 % lengths, equals the mean of
// five independent grid resolutions (GenAt, AIC's resolver per point)
// bit for bit, on every generation grid of every table, inside the grid,
// between rows, on one-sided rows, past either axis and in the truncated
// corner. A cursor that skipped or repeated a point, or a row bracket
// taken from the wrong batch, changes the sum.
func TestItem33_3GenMsOneSearch(t *testing.T) {
	tables := loadAll(t)
	batches := []float64{1, 2, 3, 7, 16, 33, 64, 100, 128, 200, 256, 384, 512, 700, 1024, 3000}
	kvs := []float64{1, 2, 9, 10, 11, 63, 100, 333, 700, 1000, 1500, 2048, 4097, 5000, 9000, 16384, 40000, 131072, 300000}
	checked := 0
	for key, tb := range tables {
		for gi := range tb.Generation {
			g := &tb.Generation[gi]
			for _, b := range batches {
				for _, kv := range kvs {
					sMin := max(1, math.Floor(kv*0.9))
					sMax := max(sMin, math.Floor(kv*1.1))
					var sum float64
					for j := range 5 {
						sum += kernels.GenAt(g, b, sMin+math.Floor((sMax-sMin)*float64(j)/4))
					}
					want := sum / 5
					if got := g.Ms(b, kv); got != want {
						t.Fatalf("%s gen %d/%d/%d %s: Ms(%g, %g) = %v, five resolutions %v", key, g.Heads, g.KVHeads, g.HeadDim, g.KVDType, b, kv, got, want)
					}
					checked++
				}
			}
		}
	}
	if checked < 10000 {
		t.Fatalf("%d points checked", checked)
	}
}
