package timing

import (
	"math"
	"testing"
)

// The reference values of spec §6.2 (unscaled ms).
func TestPolynomialTables(t *testing.T) {
	var m Polynomial
	prefill := map[int]float64{1: 16.516604, 8: 16.622914, 64: 17.474885, 512: 24.385704, 1024: 32.490712,
		2048: 49.362902, 4096: 85.755980, 8192: 169.136918, 16384: 378.277933}
	for tok, want := range prefill {
		if got := m.PrefillMs(1, tok, 0); math.Abs(got-want) > 5e-7 {
			t.Errorf("prefill(%d) = %.7f, want %.6f", tok, got, want)
		}
	}
	decode := map[float64]float64{0: 5.74, 0.0625: 9.015078, 0.1: 10.8836, 0.25: 17.63375, 0.5: 26.31, 0.75: 31.76875, 1: 34.01}
	for p, want := range decode {
		if got := m.DecodeMs(1, int(p*1e6), 0, 1e6); math.Abs(got-want) > 5e-7 {
			t.Errorf("decode(p=%v) = %.7f, want %.6f", p, got, want)
		}
	}
	// Utilisation is capped at 1, and an empty pool counts as full.
	if m.DecodeMs(1, 2e6, 0, 1e6) != m.DecodeMs(1, 1, 0, 0) {
		t.Error("p must clamp to 1")
	}
	// T = batch × (isl − prefix): the floored-mean quirk of §12.2.
	if m.PrefillMs(2, 100, 50) != m.PrefillMs(1, 100, 0) {
		t.Error("prefill must price batch × (isl − prefix) tokens")
	}
}

// T1: a fully cached prompt costs nothing.
func TestT1FullyCachedPrefill(t *testing.T) {
	if got := (Polynomial{}).PrefillMs(1, 128, 128); got != 0 {
		t.Fatalf("prefill(1,128,128) = %v", got)
	}
	if got := (Scale{}).Prefill(Polynomial{}, 1, 128, 128); got != 0 {
		t.Fatalf("scaled = %v", got)
	}
}

func TestScaleQuantizesAndFloors(t *testing.T) {
	tests := []struct {
		name string
		s    Scale
		want Time
	}{
		{"unscaled ratio 0", Scale{}, FromMs(5.74)},
		{"speedup 2", Scale{Speedup: 2, DecodeSpeedup: 1}, Time(math.Round(float64(FromMs(5.74)) / 2))},
		{"decode speedup 4", Scale{Speedup: 1, DecodeSpeedup: 4}, Time(math.Round(float64(FromMs(5.74)) / 4))},
	}
	for _, tc := range tests {
		if got := tc.s.Decode(Polynomial{}, 1, 0, 0, 100); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// The 1 ms floor applies before the speed-up: 1000× gives 1 µs steps.
	if got := (Scale{Speedup: 1000, DecodeSpeedup: 1}).Decode(Fixed{Decode: 0.2}, 1, 0, 0, 1); got != FromMs(0.001) {
		t.Errorf("floored decode = %v, want 1µs", got)
	}
	if got := (Scale{}).Decode(Polynomial{}, 0, 0, 0, 1); got != 0 {
		t.Errorf("empty decode = %v", got)
	}
}
