package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/timing"
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
	// DraftRatio is the cost of one draft step over that of a target
	// decode step at the same batch (timing.DraftRatio): about 0.1 for an
	// EAGLE/MTP head on an 8B model, 0 for the n-gram proposer, which runs
	// on the CPU. Each pass runs NextN draft steps and verifies NextN+1
	// tokens per sequence (issue 30 item 4, price in this file).
	DraftRatio float64
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

// MaxDraftRatio bounds Speculation.DraftRatio: a draft step dearer than
// the target's own step would never pay off.
const MaxDraftRatio = 1.0

// decodeTime prices the decode step of n sequences over kv context tokens
// (pool of total tokens) under speculation: the proposer's NextN draft
// steps, then the target's forward verifying NextN+1 tokens per sequence
// (timing/spec.go names vLLM's sources). At 0 % acceptance a pass emits
// one token and costs more than a plain decode step; at 100 % it emits
// NextN+1 tokens for the price of one verify and the drafts.
func (s *sampler) decodeTime(sc timing.Scale, m timing.Model, n, kv, total int) timing.Time {
	k := len(s.rates)
	return sc.Draft(m, n, k, s.ratio, kv, total) + sc.Verify(m, n, k, kv, total)
}

// mixedTime is decodeTime inside a mixed pass (vLLM V1 batches prefill
// chunks with decode tokens): the verify tokens ride in the one forward as
// n×(NextN+1) decode tokens; the drafts run after it.
func (s *sampler) mixedTime(sc timing.Scale, m timing.Mixed, batch, isl, prefix, n, kv, total int) timing.Time {
	k := len(s.rates)
	vkv := kv + n*k
	return sc.Draft(m, n, k, s.ratio, kv, total) + sc.Mixed(m, batch, isl, prefix, n*(k+1), vkv, vkv/n, total)
}

// sampler draws speculative bursts from its own PCG stream, so enabling
// speculation does not shift the output-token stream.
type sampler struct {
	rates []float64
	ratio float64 // Speculation.DraftRatio
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
	if !(s.DraftRatio >= 0 && s.DraftRatio <= MaxDraftRatio) {
		return nil, fieldErr("speculation.draft_ratio", "must be in [0, %v], got %v", MaxDraftRatio, s.DraftRatio)
	}
	return &sampler{rates: rates, ratio: s.DraftRatio, rng: rand.New(rand.NewPCG(s.Seed, rankSeed^0x7370656364656364))}, nil // "specdecd"
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

// burstLimit is the most tokens s may emit in one forward: what it may still
// generate, and no more than the pool holds the KV of (all but the last
// emitted token need KV). Without the second bound a request near the whole
// pool preempted itself in every pass, forever.
func (c *Core) burstLimit(s *seq) int {
	room := c.cfg.NumBlocks*c.cfg.BlockSize - s.length
	return min(s.remaining(c.cfg.MaxModelLen), room+1)
}

// burstReserve is the KV, in tokens, that s reserves before a burst:
// min(nextn+1, remaining) more tokens (spec §2.7), within the pool.
func (c *Core) burstReserve(s *seq, nextn int) int {
	return min(s.length+min(nextn+1, c.burstLimit(s)), c.cfg.NumBlocks*c.cfg.BlockSize)
}

// reserveBursts grows every ready request's lease, in one shot, by the
// blocks for min(nextn+1, remaining) more tokens, preempting as usual when
// the pool is short (spec §2.7). It reports false if the room cannot be
// made (TensorRT-LLM never preempts; its admission reserved the room).
func (c *Core) reserveBursts() bool {
	bs, k := c.cfg.BlockSize, len(c.spec.rates)
	c.kv.Release(&c.burstClaim) // last pass's claim, if any: the room counts as free again
	for {
		need := 0
		for _, s := range c.ready {
			target := (c.burstReserve(s, k) + bs - 1) / bs
			need += max(0, target-len(s.lease.Slots))
		}
		if c.kv.CanGrow(need) {
			// With lower tiers the room may be on its way back from
			// offload copies: claimed for the bursts as one, so that a
			// re-admitted request does not take it pass after pass.
			if c.tier != nil && !c.kv.Room(&c.burstClaim, need) {
				return false
			}
			for _, s := range c.ready {
				c.kv.Allocate(&s.lease, c.burstReserve(s, k), 0, s.hashes)
			}
			return true
		}
		if c.cfg.Policy == TRTLLM {
			return false
		}
		v := c.preempt()
		if v == nil {
			return false
		}
		keep := c.ready[:0]
		for _, s := range c.ready {
			if s != v {
				keep = append(keep, s)
			}
		}
		c.ready = keep
		if len(c.ready) == 0 {
			return false
		}
	}
}
