package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Speculation configures MTP/Eagle-style speculative decoding as burst
// sampling (spec §2.7, §6.5): each decode forward of a request emits
// 1 + (number of leading accepted drafts) tokens.
type Speculation struct {
	// NextN is the number of draft tokens per forward (1..5); 0 disables
	// speculation.
	NextN int
	// AcceptRates are the conditional acceptance probabilities of drafts
	// 1..NextN (draft i given drafts 1..i-1 were accepted). Normalized by
	// NormalizeAcceptRates; nil means the reference default 0.85, 0.3, 0, …
	AcceptRates []float64
	// Seed seeds the per-rank sampling stream; each rank mixes in its own
	// output-token seed so workers and ranks draw independent streams.
	Seed uint64
}

// DefaultAcceptRates are the reference's default conditional accept rates.
var DefaultAcceptRates = []float64{0.85, 0.3, 0, 0, 0}

// MaxNextN is the largest supported number of draft tokens.
const MaxNextN = 5

// NormalizeAcceptRates validates rates (each finite and in [0, 1]) and pads
// them with zeros or truncates them to nextn entries. nil rates mean the
// default.
func NormalizeAcceptRates(nextn int, rates []float64) ([]float64, error) {
	if nextn < 1 || nextn > MaxNextN {
		return nil, fieldErr("num_speculative_tokens", "must be in 1..%d, got %d", MaxNextN, nextn)
	}
	if len(rates) > MaxNextN {
		return nil, fieldErr("acceptance_rates", "must have at most %d entries, got %d", MaxNextN, len(rates))
	}
	if rates == nil {
		rates = DefaultAcceptRates
	}
	out := make([]float64, nextn)
	for i, r := range rates {
		if math.IsNaN(r) || math.IsInf(r, 0) || r < 0 || r > 1 {
			return nil, fieldErr(fmt.Sprintf("acceptance_rates[%d]", i), "must be a finite number in [0, 1], got %v", r)
		}
		if i < nextn {
			out[i] = r
		}
	}
	return out, nil
}

// ParseAcceptRates parses the reference's comma-separated form ("0.85, 0.3")
// and normalizes it.
func ParseAcceptRates(nextn int, s string) ([]float64, error) {
	var rates []float64
	for i, f := range strings.Split(s, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("acceptance_rates[%d]: not a number: %q", i, strings.TrimSpace(f))
		}
		rates = append(rates, r)
	}
	return NormalizeAcceptRates(nextn, rates)
}

// sampler draws speculative bursts from its own PCG stream, so enabling
// speculation does not shift the output-token stream.
type sampler struct {
	rates []float64
	rng   *rand.Rand
}

func newSampler(s Speculation, rankSeed uint64) (*sampler, error) {
	if s.NextN == 0 {
		return nil, nil
	}
	rates, err := NormalizeAcceptRates(s.NextN, s.AcceptRates)
	if err != nil {
		return nil, err
	}
	return &sampler{rates: rates, rng: rand.New(rand.NewPCG(s.Seed, rankSeed^0x7370656364656364))}, nil // "specdecd"
}

// burst returns how many tokens a request with remaining outputs emits in
// one forward: 1 plus the leading accepted drafts, capped at remaining.
func (s *sampler) burst(remaining int) int {
	if remaining <= 0 {
		return 0
	}
	b := 1
	for _, r := range s.rates {
		if b >= remaining || !(s.rng.Float64() < r) {
			break
		}
		b++
	}
	return b
}
