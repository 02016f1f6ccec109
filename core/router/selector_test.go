package router

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// KR1–KR6, KR8: the cost formula of spec §8.7 (§10.10's numbers).
func TestKRCostFormula(t *testing.T) {
	def := DefaultCostConfig()
	with := func(f func(*CostConfig)) CostConfig { k := def; f(&k); return k }
	tests := []struct {
		name string
		k    CostConfig
		isl  int
		bs   int
		c    Candidate
		want float64
	}{
		{"KR1 clamps non-decode overlap credit", with(func(k *CostConfig) { k.PrefillLoadScale = 2 }), 64, 16,
			Candidate{Cached: 96, DeviceOverlap: 6, ActivePrefill: 16, DecodeBlocks: 2 + 3}, 7},
		{"KR1 without prefill tracking", with(func(k *CostConfig) { k.PrefillLoadScale = 2; k.TrackPrefillTokens = false }), 64, 16,
			Candidate{Cached: 96, DeviceOverlap: 6, ActivePrefill: 16, DecodeBlocks: 2 + 3}, 5},
		{"KR2 default ignores active requests", def, 0, 16, Candidate{DecodeBlocks: 100, Requests: 4}, 100},
		{"KR2 charges active requests", with(func(k *CostConfig) { k.DecodeActiveRequestWeight = 32 }), 0, 16,
			Candidate{DecodeBlocks: 100, Requests: 4}, 228},
		{"KR3 decode worker credits overlap", with(func(k *CostConfig) { k.DecodeWorker = true; k.TrackPrefillTokens = false }), 64, 16,
			Candidate{DeviceOverlap: 3, DecodeBlocks: 10}, 7},
		{"KR4 scale after credit, warm", with(func(k *CostConfig) { k.PrefillLoadScale = 2 }), 64, 16,
			Candidate{Cached: 32, DeviceOverlap: 2, DecodeBlocks: 3}, 7},
		{"KR4 scale after credit, cold", with(func(k *CostConfig) { k.PrefillLoadScale = 2 }), 64, 16, Candidate{}, 8},
		{"KR5 credit 1, warm", def, 128, 16, Candidate{Cached: 64, DeviceOverlap: 4, DecodeBlocks: 5}, 9},
		{"KR5 credit 1, cold (no load)", def, 128, 16, Candidate{NoLoad: true}, 8},
		{"KR5 credit 1.5, warm", with(func(k *CostConfig) { k.OverlapScoreCredit = 1.5 }), 128, 16,
			Candidate{Cached: 64, DeviceOverlap: 4, DecodeBlocks: 5}, 7},
		{"KR6 decay 0, warm", def, 64, 16, Candidate{Cached: 64, DeviceOverlap: 4, ActivePrefill: 48}, 3},
		{"KR6 decay 1, warm", with(func(k *CostConfig) { k.OverlapScoreCreditDecay = 1 }), 64, 16,
			Candidate{Cached: 64, DeviceOverlap: 4, ActivePrefill: 48}, 7 - 4/1.75},
		{"KR7 shared hits beyond the device, w0", with(func(k *CostConfig) { k.SharedCacheMultiplier = 0.5 }), 4, 1,
			Candidate{Cached: 2, DeviceOverlap: 2, SharedHits: 4}, 1},
		{"KR7 shared hits only, w1", with(func(k *CostConfig) { k.SharedCacheMultiplier = 0.5 }), 4, 1,
			Candidate{NoLoad: true, SharedHits: 4}, 2},
		{"KR8 warm", def, 4, 1, Candidate{Cached: 2, DeviceOverlap: 2, DecodeBlocks: 1}, 3},
		{"KR8 shared multiplier 1 (no shared hits on warm)", with(func(k *CostConfig) { k.SharedCacheMultiplier = 1 }), 4, 1,
			Candidate{Cached: 2, DeviceOverlap: 2, DecodeBlocks: 1, SharedHits: 4}, 1},
		// Without tiers the device overlap is the effective overlap.
		{"KR9 effective overlap without tiers, w0", def, 64, 16, Candidate{Cached: 64, DeviceOverlap: 4, DecodeBlocks: 1}, 1},
		{"KR9 effective overlap without tiers, w1", def, 64, 16, Candidate{}, 4},
		{"KR8 credit 0, warm", with(func(k *CostConfig) { k.OverlapScoreCredit = 0 }), 4, 1,
			Candidate{Cached: 2, DeviceOverlap: 2, DecodeBlocks: 1}, 5},
		{"KR8 scale 0, warm", with(func(k *CostConfig) { k.PrefillLoadScale = 0 }), 4, 1,
			Candidate{Cached: 2, DeviceOverlap: 2, DecodeBlocks: 1}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.k.Cost(tc.isl, tc.bs, &tc.c, 0); !near(got, tc.want) {
				t.Fatalf("cost %v, want %v", got, tc.want)
			}
		})
	}
}

// KR4–KR6: the cheapest candidate wins.
func TestKRSelection(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 0))
	def := DefaultCostConfig()
	tests := []struct {
		name  string
		k     CostConfig
		isl   int
		cands []Candidate
		want  int
	}{
		{"KR4 warm", CostConfig{OverlapScoreCredit: 1, PrefillLoadScale: 2, TrackPrefillTokens: true}, 64,
			[]Candidate{{Cached: 32, DeviceOverlap: 2, DecodeBlocks: 3}, {}}, 0},
		{"KR5 credit 1 prefers cold", def, 128, []Candidate{{Cached: 64, DeviceOverlap: 4, DecodeBlocks: 5}, {NoLoad: true}}, 1},
		{"KR6 decay 0 prefers warm", def, 64, []Candidate{{Cached: 64, DeviceOverlap: 4, ActivePrefill: 48}, {NoLoad: true}}, 0},
		{"KR6 decay 1 prefers cold", CostConfig{OverlapScoreCredit: 1, OverlapScoreCreditDecay: 1, PrefillLoadScale: 1, TrackPrefillTokens: true}, 64,
			[]Candidate{{Cached: 64, DeviceOverlap: 4, ActivePrefill: 48}, {NoLoad: true}}, 1},
		{"KR12 overloaded is skipped", def, 64, []Candidate{{Overloaded: true}, {DecodeBlocks: 50}}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := tc.k.Select(tc.isl, 16, tc.cands, rng, nil)
			if err != nil || got != tc.want {
				t.Fatalf("chose %d (%v), want %d", got, err, tc.want)
			}
		})
	}
	if _, _, err := def.Select(64, 16, []Candidate{{Overloaded: true}, {Overloaded: true}}, rng, nil); !errors.Is(err, ErrAllOverloaded) {
		t.Fatalf("all overloaded: %v", err)
	}
}

// KR10: extreme finite costs are normalized by magnitude before the softmax.
func TestKR10SoftmaxExtremeCosts(t *testing.T) {
	if got := softmaxSample([]float64{-math.MaxFloat64, math.MaxFloat64}, 1, 0.6); got != 0 {
		t.Fatalf("row %d, want 0", got)
	}
	if got := softmaxSample([]float64{1, 1, 1, 1}, 1, 0.6); got != 2 {
		t.Fatalf("equal costs: row %d, want the uniform row 2", got)
	}
}

// KR11: potential decode blocks after admission.
func TestKR11PotentialDecodeBlocks(t *testing.T) {
	for _, tc := range []struct {
		name            string
		isl, additional int
		tracked         bool
		want            int
	}{
		{"untracked isl 32", 32, 0, false, 102},
		{"2 tracked + 2 additional", 32, 2, true, 102},
		{"fully active overlap", 32, 0, true, 100},
		{"partial tail block", 33, 2, true, 103},
	} {
		if got := PotentialDecodeBlocks(100, tc.isl, 16, tc.tracked, tc.additional); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// KR13: zero-temperature ties are broken at random, not by worker id; the
// same seed gives the same choices.
func TestKR13TiesAreRandomAndSeeded(t *testing.T) {
	def := DefaultCostConfig()
	pick := func(seed uint64) []int {
		rng := rand.New(rand.NewPCG(seed, 0))
		var out []int
		for range 120 {
			w, _, err := def.Select(64, 16, make([]Candidate, 3), rng, nil)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, w)
		}
		return out
	}
	a, b := pick(7), pick(7)
	seen := map[int]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed, different choices")
		}
		seen[a[i]] = true
	}
	if len(seen) < 2 {
		t.Fatalf("120 tied selections chose only %v", seen)
	}
}

// A positive temperature samples: the cheapest is most likely, not certain;
// the same seed gives the same draws.
func TestTemperatureSamples(t *testing.T) {
	k := DefaultCostConfig()
	k.Temperature = 1
	count := [2]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		w, _, _ := k.Select(64, 16, []Candidate{{DecodeBlocks: 0}, {DecodeBlocks: 4}}, rng, nil)
		count[w]++
	}
	if !(count[0] > count[1] && count[1] > 0) {
		t.Fatalf("choices %v", count)
	}
}

// Overloaded candidates are never drawn, at any temperature.
func TestOverloadedNeverChosen(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, temp := range []float64{0, 1} {
		k := DefaultCostConfig()
		k.Temperature = temp
		for range 200 {
			w, _, err := k.Select(64, 16, []Candidate{{Overloaded: true}, {DecodeBlocks: 5}, {Overloaded: true}, {DecodeBlocks: 5}}, rng, nil)
			if err != nil || w == 0 || w == 2 {
				t.Fatalf("temperature %v chose %d (%v)", temp, w, err)
			}
		}
	}
}
