package workload

import (
	"reflect"
	"testing"
)

// TestItem32_6SyntheticLengths: fixed lengths are today's workload;
// distributions stay in their bounds, follow their mean, and are the same
// for the same seed (and differ for another).
func TestItem32_6SyntheticLengths(t *testing.T) {
	lens := func(w *Workload) (in, out []int) {
		for _, s := range w.Sessions {
			in, out = append(in, s.Turns[0].Input), append(out, s.Turns[0].Output)
		}
		return
	}
	tests := []struct {
		name         string
		in, out      Length
		inLo, inHi   int
		outLo, outHi int
		inMean       float64 // ±5 %
		varies       bool
	}{
		{"fixed", Fixed(300), Fixed(0), 300, 300, 0, 0, 300, false},
		{"normal", Length{Dist: Normal, Mean: 1000, Stddev: 100}, Fixed(7), 1, MaxRequestTokens, 7, 7, 1000.5, true},
		{"normal truncated at 1", Length{Dist: Normal, Mean: 1, Stddev: 50}, Length{Dist: Normal, Mean: 3, Stddev: 0}, 1, 400, 3, 3, 0, true},
		{"normal stddev 0", Length{Dist: Normal, Mean: 99.5}, Fixed(1), 100, 100, 1, 1, 100, false},
		{"uniform", Length{Dist: Uniform, Min: 10, Max: 20}, Length{Dist: Uniform, Min: 0, Max: 1}, 10, 20, 0, 1, 15, true},
		{"uniform of one", Length{Dist: Uniform, Min: 5, Max: 5}, Fixed(2), 5, 5, 2, 2, 5, false},
	}
	for _, tc := range tests {
		w, err := SyntheticLengths(2000, tc.in, tc.out, 42)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		in, out := lens(w)
		sum, seen := 0, map[int]bool{}
		for i := range in {
			if in[i] < tc.inLo || in[i] > tc.inHi || out[i] < tc.outLo || out[i] > tc.outHi {
				t.Fatalf("%s: request %d has %d in, %d out; want [%d, %d], [%d, %d]", tc.name, i, in[i], out[i], tc.inLo, tc.inHi, tc.outLo, tc.outHi)
			}
			sum += in[i]
			seen[in[i]] = true
		}
		if mean := float64(sum) / float64(len(in)); tc.inMean > 0 && (mean < tc.inMean*0.95 || mean > tc.inMean*1.05) {
			t.Errorf("%s: mean input %.1f, want ≈ %.1f", tc.name, mean, tc.inMean)
		}
		if (len(seen) > 1) != tc.varies {
			t.Errorf("%s: %d distinct input lengths", tc.name, len(seen))
		}
		again, _ := SyntheticLengths(2000, tc.in, tc.out, 42)
		if !reflect.DeepEqual(w, again) {
			t.Errorf("%s: the same seed gave another workload", tc.name)
		}
		other, _ := SyntheticLengths(2000, tc.in, tc.out, 43)
		if reflect.DeepEqual(w, other) == tc.varies {
			t.Errorf("%s: seed 43 equal to seed 42: %v (want %v)", tc.name, !tc.varies, !tc.varies)
		}
	}
	// A fixed workload is Synthetic's, whatever the seed.
	a, _ := SyntheticLengths(50, Fixed(16), Fixed(4), 7)
	b, _ := Synthetic(50, 16, 4)
	if !reflect.DeepEqual(a, b) {
		t.Error("fixed lengths differ from Synthetic")
	}
}

// TestItem32_6LengthCheck: SyntheticLengths refuses impossible parameters
// (the config refuses them first, naming the same keys).
func TestItem32_6LengthCheck(t *testing.T) {
	for _, tc := range []struct {
		in, out Length
		want    string
	}{
		{Length{Dist: Uniform, Min: 3, Max: 2}, Fixed(1), "traffic.source.input_tokens.max: must be ≥ min (3), got 2"},
		{Fixed(1), Length{Dist: Normal, Mean: 5, Stddev: -1}, "traffic.source.output_tokens.stddev: must be ≥ 0, got -1"},
		{Length{Dist: "zipf"}, Fixed(1), `traffic.source.input_tokens: unknown distribution "zipf"`},
		{Fixed(0), Length{Dist: Uniform, Max: 1}, "traffic.source.input_tokens: must be in [1, 16777216], got 0"},
	} {
		if _, err := SyntheticLengths(3, tc.in, tc.out, 1); err == nil || err.Error() != tc.want {
			t.Errorf("%+v %+v: err %v, want %q", tc.in, tc.out, err, tc.want)
		}
	}
}
