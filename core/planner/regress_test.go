package planner

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

func TestFits(t *testing.T) {
	pts := func(f func(x float64) float64, xs ...float64) []sample {
		var ss []sample
		for _, x := range xs {
			ss = append(ss, sample{x1: x, x2: x, y: f(x)})
		}
		return ss
	}
	for _, tc := range []struct {
		name string
		ss   []sample
		want linFit
	}{
		{"exact line", pts(func(x float64) float64 { return 10 + 0.02*x }, 512, 1024, 4096, 2048), linFit{a: 10, b: 0.02}},
		{"constant time", pts(func(float64) float64 { return 100 }, 512, 1024, 4096), linFit{a: 100}},
		// One x value: no slope to learn, so the time per token.
		{"one load level", pts(func(float64) float64 { return 50 }, 1000, 1000, 1000), linFit{b: 0.05}},
		{"no load", pts(func(float64) float64 { return 7 }, 0, 0), linFit{a: 7}},
		// A faster pass with more tokens is noise: the mean.
		{"negative slope", pts(func(x float64) float64 { return 100 - 0.01*x }, 0, 1000, 2000), linFit{a: 90}},
		// The line 0.1·x − 50 crosses below zero: through the origin instead.
		{"negative intercept", pts(func(x float64) float64 { return 0.1*x - 50 }, 1000, 2000), linFit{b: (50*1000 + 150*2000) / (1e6 + 4e6)}},
		{"nothing", nil, linFit{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fitPrefill(tc.ss)
			if !near(f.a, tc.want.a) || !near(f.b, tc.want.b) || f.c != 0 {
				t.Errorf("fit %+v, want %+v", f, tc.want)
			}
			d := fitDecode(tc.ss) // x2 = x1 here: the same line on c
			if !near(d.a, tc.want.a) || !near(d.c, tc.want.b) || d.b != 0 {
				t.Errorf("decode fit %+v, want %+v", d, tc.want)
			}
		})
	}
}

func TestFit2(t *testing.T) {
	var ss []sample
	for i := range 12 {
		x1, x2 := float64(512*(i%4)), float64(40_000*(1+i%3))
		ss = append(ss, sample{x1: x1, x2: x2, y: 10 + 0.02*x1 + 1e-4*x2})
	}
	if f := fit2(ss); !near(f.a, 10) || !near(f.b, 0.02) || !near(f.c, 1e-4) {
		t.Errorf("fit2 = %+v, want {10 0.02 0.0001}", f)
	}
	// Collinear inputs (decode load grows with prefill): one input explains it.
	ss = ss[:0]
	for i := range 6 {
		x := float64(1000 * (i + 1))
		ss = append(ss, sample{x1: x, x2: 2 * x, y: 5 + 0.01*x})
	}
	f := fit2(ss)
	for _, s := range ss {
		if !near(f.at(s.x1, s.x2), s.y) {
			t.Fatalf("collinear fit %+v misses %+v", f, s)
		}
	}
	// Only decode passes: the prefill slope is not determined; no panic, no
	// negative coefficient.
	ss = ss[:0]
	for i := range 6 {
		ss = append(ss, sample{x2: float64(10_000 * (i + 1)), y: 5 + 1e-4*float64(10_000*(i+1))})
	}
	if f := fit2(ss); f.a < 0 || f.b < 0 || f.c < 0 || !near(f.at(0, 30_000), 8) {
		t.Errorf("decode-only fit %+v", f)
	}
}

// TestRetirement: a window full of one load level keeps the rare levels
// it saw (bucketed retirement), and a uniform window is FIFO.
func TestRetirement(t *testing.T) {
	var w window
	seq := uint64(0)
	add := func(x float64) {
		seq++
		w.keep(sample{x1: x, y: x, seq: seq}, 8, 4, prefill)
	}
	add(100)
	add(8000)
	for range 50 {
		add(4000) // bucket 1 of [100, 8000]; the rare ones are buckets 0 and 3
	}
	if len(w.samples) != 8 {
		t.Fatalf("%d samples kept, want 8", len(w.samples))
	}
	seen := map[float64]int{}
	for _, s := range w.samples {
		seen[s.x1]++
	}
	if seen[100] != 1 || seen[8000] != 1 || seen[4000] != 6 {
		t.Errorf("kept %v", seen)
	}
	for i := 1; i < len(w.samples); i++ {
		if w.samples[i].seq <= w.samples[i-1].seq {
			t.Fatalf("samples out of arrival order")
		}
	}
	var u window
	for i := range 20 {
		u.keep(sample{x1: 5, seq: uint64(i)}, 4, 16, aggregated)
	}
	if u.samples[0].seq != 16 || u.samples[3].seq != 19 {
		t.Errorf("uniform window kept %+v, want the last 4", u.samples)
	}
}
