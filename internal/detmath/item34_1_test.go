package detmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// logApproxFrexp is LogApprox as written before issue 34 item 1, with
// math.Frexp: the reference its bit-level split must equal.
func logApproxFrexp(x float64) float64 {
	m, e := math.Frexp(x)
	f := float64((m - 0.5) * (2 * logTableN))
	j := int(f)
	if j >= logTableN {
		j = logTableN - 1
	}
	t := f - float64(j)
	lm := logTable[j] + float64(t*(logTable[j+1]-logTable[j]))
	k := float64(e)
	return float64(k*ln2Hi) + (lm + float64(k*ln2Lo))
}

// TestItem34_1LogApprox checks LogApprox against its math.Frexp form, bit
// for bit: on powers of two and their neighbours, the extremes of the
// normal range and subnormals, and a million random positive finite
// floats (its domain).
func TestItem34_1LogApprox(t *testing.T) {
	xs := []float64{
		0.5, 1, 2, 3, 1e-6, 1e6, 1e-300, 1e300, math.MaxFloat64, math.SmallestNonzeroFloat64,
		0x1p-1022, 0x1p-1023, 0x1.fffffffffffffp-1023, math.Nextafter(1, 0), math.Nextafter(1, 2),
	}
	for e := -1074; e <= 1023; e++ {
		p := math.Ldexp(1, e)
		xs = append(xs, p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1)))
	}
	rng := rand.New(rand.NewPCG(34, 1))
	for range 1_000_000 {
		if x := math.Float64frombits(rng.Uint64() >> 1); x > 0 && x <= math.MaxFloat64 { // its domain: positive, finite
			xs = append(xs, x)
		}
	}
	for _, x := range xs {
		if x == 0 {
			continue // Nextafter(2^-1074, 0): outside the domain
		}
		got, want := LogApprox(x), logApproxFrexp(x)
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("LogApprox(%v [%#x]) = %v, with math.Frexp %v", x, math.Float64bits(x), got, want)
		}
	}
}
