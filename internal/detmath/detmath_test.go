package detmath

import (
	"math"
	"testing"
)

func TestAgainstStdlib(t *testing.T) {
	for _, x := range []float64{1e-300, 1e-9, 0.001, 0.5, 0.7071, 1, 1.0001, 2, math.E, 10, 98, 1000, 1e9, 1e300} {
		if got, want := Log(x), math.Log(x); math.Abs(got-want) > 4e-16*math.Max(1, math.Abs(want)) {
			t.Errorf("Log(%g) = %.17g, want %.17g", x, got, want)
		}
	}
	for _, x := range []float64{-700, -20, -1, -1e-9, 0, 1e-9, 0.3, 1, 2.5, 20, 700} {
		if got, want := Exp(x), math.Exp(x); math.Abs(got-want) > 4e-16*want {
			t.Errorf("Exp(%g) = %.17g, want %.17g", x, got, want)
		}
	}
	if got, want := Pow(0.9, 37.5), math.Pow(0.9, 37.5); math.Abs(got-want) > 1e-14*want {
		t.Errorf("Pow = %v, want %v", got, want)
	}
	if !math.IsNaN(Log(-1)) || !math.IsInf(Log(0), -1) || Exp(1000) != math.Inf(1) || Exp(-1000) != 0 {
		t.Error("edge cases")
	}
}

// Golden bits: these must be identical on every GOARCH (the CI runs this
// test natively and under GOOS=js GOARCH=wasm).
func TestGoldenBits(t *testing.T) {
	tests := []struct {
		got  float64
		want uint64
	}{
		{Log(98), 0x40125701b6f8746a},
		{Exp(3.7), 0x4044394144eeec81},
		{Log(1.0009), 0x3f4d7a5a12e523a2},
	}
	for i, tc := range tests {
		if b := math.Float64bits(tc.got); b != tc.want {
			t.Errorf("case %d: bits %#x, want %#x", i, b, tc.want)
		}
	}
}

func TestLogApprox(t *testing.T) {
	for _, x := range []float64{1e-9, 0.001, 0.5, 0.75, 0.999999, 1, 1.5, 7.77, 98, 1e6, 1e12} {
		if got, want := LogApprox(x), math.Log(x); math.Abs(got-want) > 1e-8*math.Max(1, math.Abs(want)) {
			t.Errorf("LogApprox(%g) = %.12g, want %.12g", x, got, want)
		}
	}
}

func BenchmarkLog(b *testing.B) {
	x := 1.0
	for b.Loop() {
		x = Log(x+7.5) - 1
	}
}

func BenchmarkLogApprox(b *testing.B) {
	x := 1.0
	for b.Loop() {
		x = LogApprox(x+7.5) - 1
	}
}
