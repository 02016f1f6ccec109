// Package detmath has the few transcendental functions the simulator needs,
// computed with plain IEEE arithmetic so every target gives the same bits.
// The standard library's Log and Exp use assembly on amd64 and pure Go on
// wasm, which differ in the last bit and would break byte-identical reports
// across the CLI, the page and the Worker. Every product is wrapped in an
// explicit float64 conversion so the compiler cannot fuse multiply-adds.
package detmath

import "math"

const (
	ln2Hi = 6.93147180369123816490e-01 // high bits of ln 2: k*ln2Hi is exact for |k| < 2^11
	ln2Lo = 1.90821492927058770002e-10
)

// Log returns the natural logarithm of x.
func Log(x float64) float64 {
	switch {
	case math.IsNaN(x) || x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	case math.IsInf(x, 1):
		return x
	}
	m, e := math.Frexp(x) // x = m·2^e, m in [0.5, 1)
	if m < math.Sqrt2/2 {
		m *= 2
		e--
	}
	// log(m) = 2·atanh(s) with s = (m−1)/(m+1), |s| ≤ 0.1716.
	s := (m - 1) / (m + 1)
	s2 := float64(s * s)
	sum := 0.0
	for k := 27; k >= 3; k -= 2 {
		sum = float64(s2*sum) + 1/float64(k)
	}
	series := float64(2*s) + float64(float64(2*s)*float64(s2*sum))
	k := float64(e)
	return float64(k*ln2Hi) + (series + float64(k*ln2Lo))
}

// Exp returns e**x.
func Exp(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return x
	case x > 709.8:
		return math.Inf(1)
	case x < -745.2:
		return 0
	}
	k := math.Round(x / math.Ln2)
	r := (x - float64(k*ln2Hi)) - float64(k*ln2Lo) // |r| ≤ ln2/2
	// Taylor series, Horner form: 22 terms reach far below one ulp.
	sum := 1.0
	for n := 22; n >= 1; n-- {
		sum = 1 + float64(float64(r*sum)/float64(n))
	}
	return math.Ldexp(sum, int(k))
}

// Pow returns x**y for x > 0.
func Pow(x, y float64) float64 {
	if x == 1 || y == 0 {
		return 1
	}
	if x <= 0 {
		return math.Pow(x, y) // exact edge cases only: 0, negatives with integer y
	}
	return Exp(float64(y * Log(x)))
}

// logTable holds Log(m) for m = 0.5 + j/(2·logTableN), j = 0..logTableN.
const logTableN = 4096

var logTable = func() [logTableN + 1]float64 {
	var t [logTableN + 1]float64
	for j := range t {
		t[j] = Log(0.5 + float64(j)/(2*logTableN))
	}
	return t
}()

// LogApprox is a fast natural logarithm for positive finite x, accurate to
// about 1e-8 (linear interpolation in a table of the mantissa's logarithm):
// plenty for histogram bucketing, and identical on every target.
func LogApprox(x float64) float64 {
	// m, e := math.Frexp(x), m in [0.5, 1), read off the bits for a normal
	// x (issue 34 item 1: the report takes a logarithm per inter-token gap,
	// and math.Frexp's general path cost more than the rest of LogApprox).
	b := math.Float64bits(x)
	m, e := math.Float64frombits(b&^(0x7ff<<52)|1022<<52), int(b>>52)&0x7ff-1022
	if e == -1022 || e == 0x7ff-1022 { // zero, subnormal, infinite or NaN
		m, e = math.Frexp(x)
	}
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
