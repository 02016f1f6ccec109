package workload

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dynosim/dynosim-web/internal/detmath"
)

// Length is a synthetic request length in tokens: a fixed count, a normal
// {mean, stddev} or a uniform {min, max} (issue 32 item 6), the shapes
// AIPerf (--synthetic-input-tokens-mean/-stddev) and inference-lab
// (input_len_dist: fixed | uniform {min, max} | normal {mean, std_dev})
// describe workloads with.
type Length struct {
	Dist   string  // "" (fixed) | "normal" | "uniform"
	N      int     // fixed
	Mean   float64 // normal
	Stddev float64 // normal
	Min    int     // uniform, inclusive
	Max    int     // uniform, inclusive
}

// Fixed is the length n for every request.
func Fixed(n int) Length { return Length{N: n} }

// Distribution names of Length.Dist.
const (
	Normal  = "normal"
	Uniform = "uniform"
)

// normalTries bounds the rejection sampling of a truncated normal; past
// it the draw is the mean, rounded and clamped (AIPerf's sample_normal
// falls back to the clamped mean the same way).
const normalTries = 64

// Expected is the length's mean (the page's quick form shows it).
func (l Length) Expected() float64 {
	switch l.Dist {
	case Normal:
		return l.Mean
	case Uniform:
		return float64(l.Min+l.Max) / 2
	}
	return float64(l.N)
}

// draw is one length from r. A fixed length (and a normal of stddev 0)
// draws nothing, so a fixed workload's stream is untouched. The normal is
// truncated to [1, MaxRequestTokens] by rejection, then rounded up, as
// AIPerf's sample_positive_normal_integer takes the ceiling of a sample
// truncated at 0. The polar method uses only detmath.Log and the exact
// Sqrt, so the CLI, the page and the Worker draw the same bits.
func (l Length) draw(r *rand.Rand) int {
	switch l.Dist {
	case Uniform:
		return l.Min + r.IntN(l.Max-l.Min+1)
	case Normal:
		if l.Stddev > 0 {
			for range normalTries {
				x := l.Mean + float64(l.Stddev*stdNormal(r))
				if x > 0 && x <= MaxRequestTokens {
					return int(math.Ceil(x))
				}
			}
		}
		return min(max(int(math.Round(l.Mean)), 1), MaxRequestTokens)
	}
	return l.N
}

// stdNormal is a standard normal deviate by Marsaglia's polar method.
func stdNormal(r *rand.Rand) float64 {
	for {
		u := float64(2*r.Float64()) - 1
		v := float64(2*r.Float64()) - 1
		s := float64(u*u) + float64(v*v)
		if s > 0 && s < 1 {
			return float64(u * math.Sqrt(float64(-2*detmath.Log(s))/s))
		}
	}
}

// Check reports the first impossible parameter of l, naming key (e.g.
// traffic.source.input_tokens.stddev); least is the smallest length
// allowed (1 for a prompt, 0 for an output). A normal's mean must lie in
// [1, MaxRequestTokens], where its truncation keeps every draw.
func (l Length) Check(key string, least int) error {
	finite := func(x float64) bool { return x == x && x >= -math.MaxFloat64 && x <= math.MaxFloat64 }
	switch l.Dist {
	case "":
		if l.N < least || l.N > MaxRequestTokens {
			return fmt.Errorf("%s: must be in [%d, %d], got %d", key, least, MaxRequestTokens, l.N)
		}
	case Normal:
		if !finite(l.Mean) || l.Mean < 1 || l.Mean > MaxRequestTokens {
			return fmt.Errorf("%s.mean: must be in [1, %d], got %v", key, MaxRequestTokens, l.Mean)
		}
		if !finite(l.Stddev) || l.Stddev < 0 {
			return fmt.Errorf("%s.stddev: must be ≥ 0, got %v", key, l.Stddev)
		}
		if l.Stddev > MaxRequestTokens {
			return fmt.Errorf("%s.stddev: must be ≤ %d, got %v", key, MaxRequestTokens, l.Stddev)
		}
	case Uniform:
		switch {
		case l.Min < least || l.Min > MaxRequestTokens:
			return fmt.Errorf("%s.min: must be in [%d, %d], got %d", key, least, MaxRequestTokens, l.Min)
		case l.Max < l.Min:
			return fmt.Errorf("%s.max: must be ≥ min (%d), got %d", key, l.Min, l.Max)
		case l.Max > MaxRequestTokens:
			return fmt.Errorf("%s.max: must be ≤ %d, got %d", key, MaxRequestTokens, l.Max)
		}
	default:
		return fmt.Errorf("%s: unknown distribution %q", key, l.Dist)
	}
	return nil
}

// lengthSeed is the stream of synthetic lengths ("lengths"), apart from
// the arrivals' "workload" stream under the same traffic.load.seed.
const lengthSeed = 0x6c656e67746873

// SyntheticLengths returns n single-turn requests with unique prompts whose
// input and output lengths are drawn from in and out, request by request
// (input, then output), from a PCG stream seeded by seed. Fixed lengths
// draw nothing: SyntheticLengths(n, Fixed(a), Fixed(b), s) is Synthetic(n, a, b).
func SyntheticLengths(n int, in, out Length, seed uint64) (*Workload, error) {
	if in.Dist == "" && out.Dist == "" {
		return Synthetic(n, in.N, out.N)
	}
	if err := in.Check("traffic.source.input_tokens", 1); err != nil {
		return nil, err
	}
	if err := out.Check("traffic.source.output_tokens", 0); err != nil {
		return nil, err
	}
	w, err := Synthetic(n, 1, 0)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, lengthSeed))
	for i := range w.Sessions {
		t := &w.Sessions[i].Turns[0]
		t.Input, t.Output = in.draw(r), out.draw(r)
	}
	return w, nil
}
