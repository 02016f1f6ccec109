package timing

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fromNsRound is FromNs as it was written before issue 34 item 1 (with
// math.Round): the reference the truncate-and-correct version must equal.
func fromNsRound(ns float64) Time {
	switch {
	case ns >= float64(Horizon) || ns != ns:
		return Horizon
	case ns <= -float64(Horizon):
		return -Horizon
	}
	return Time(math.Round(ns))
}

// TestItem34_1FromNs checks FromNs and quantize's ratio-1 shortcut against
// math.Round on halves, neighbours of halves, huge and tiny values, the
// saturation edges, and random durations of every magnitude.
func TestItem34_1FromNs(t *testing.T) {
	h := float64(Horizon)
	cases := []float64{
		0, math.Copysign(0, -1), 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, -0.49999999999999994,
		math.Nextafter(0.5, 1), math.Nextafter(0.5, 0), 1 << 52, 1<<52 + 0.5, 1<<53 - 1, 1 << 53, 1<<53 + 2,
		1e17 + 0.5, h, -h, math.Nextafter(h, 0), math.Nextafter(-h, 0), 2 * h, math.Inf(1), math.Inf(-1), math.NaN(),
		math.SmallestNonzeroFloat64, 4503599627370495.5, -4503599627370495.5,
	}
	rng := rand.New(rand.NewPCG(34, 2))
	for range 1_000_000 {
		x := math.Ldexp(rng.Float64(), rng.IntN(130)-70)
		if rng.IntN(2) == 0 {
			x = -x
		}
		cases = append(cases, x, math.Floor(x)+0.5)
	}
	for _, ns := range cases {
		if got, want := FromNs(ns), fromNsRound(ns); got != want {
			t.Fatalf("FromNs(%v) = %d, math.Round gives %d", ns, got, want)
		}
	}
	for _, ms := range []float64{1, 5.74, 33.99, 1e-7, 1e9, 1e13, 3e13, float64(Horizon) / 1e6} {
		for _, ratio := range []float64{1, 0.5, 2, 0} {
			want := fromNsRound(ms * 1e6)
			if ratio > 0 && want > 0 {
				want = fromNsRound(float64(want) / ratio)
			}
			if got := quantize(ms, ratio); got != want {
				t.Fatalf("quantize(%v, %v) = %d, want %d", ms, ratio, got, want)
			}
		}
	}
}
