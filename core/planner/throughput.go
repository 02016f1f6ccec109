package planner

import (
	"fmt"
	"math"
)

// Throughput-based scaling (Dynamo's predictive mode): forecast the next
// interval's request rate λ (req/s), mean ISL and mean OSL, turn them
// into token demands and divide by what one worker of the pool sustains
// within the SLA, priced by the run's own timing model (the simulator's
// stand-in for Dynamo's pre-deployment profile):
//
//	prefill demand  = λ × ISL × (1 − KV hit rate)    tokens/s
//	decode demand   = λ × OSL                        tokens/s
//	prefill workers = ⌈prefill demand / prefill capacity⌉
//	decode workers  = ⌈decode demand / decode capacity⌉
//	aggregated      = ⌈prefill demand / prefill capacity + decode demand / decode capacity⌉
//
// (one aggregated worker does both jobs, so the two demands add as
// fractions of its capacity), each at least the pool's minimum, the whole
// within max_num_gpus. The capacities are below.

// maxBatch bounds the batch sizes tried when the pool sets no limit.
const maxBatch = 4096

// maxChunks bounds the chunks priced one by one for a chunked prompt;
// longer prompts price an evenly spread sample of them.
const maxChunks = 256

// bestBatch picks the batch k in [1, kmax] that maximises k / ms(k) (work
// per millisecond) among those with ms(k) ≤ limit. Candidates are every k
// up to 64, then a 10 % geometric ladder, then kmax, so the cost stays
// small for any kmax and no monotonicity of the timing model is assumed.
// When no batch fits, it answers k = 1 with ok = false (the SLA is out of
// reach; the planner provisions for batch 1, the best it can do).
func bestBatch(kmax int, ms func(k int) float64, limit float64) (k int, t float64, ok bool) {
	kmax = max(kmax, 1)
	try := func(c int) {
		tc := ms(c)
		if tc > limit {
			return
		}
		if !ok || float64(c)*t > float64(k)*tc { // c/tc > k/t without dividing by zero
			k, t, ok = c, tc, true
		}
	}
	c := 1
	for ; c <= kmax && c <= 64; c++ {
		try(c)
	}
	for f := float64(c); c <= kmax; f *= 1.1 {
		if n := min(int(f), kmax); n >= c {
			try(n)
			c = n + 1
		}
	}
	if kmax > 64 {
		try(kmax)
	}
	if !ok {
		return 1, ms(1), false
	}
	return k, t, true
}

// prefillCapacity is the prompt tokens per second one worker prefills
// with a prompt's prefill inside the TTFT SLA. The prompt has isl tokens
// of which isl × hit are cached, u = isl − cached to compute; C is
// max_batched_tokens.
//
//   - u ≤ C (or no C): a pass packs k prompts (k ≤ ⌊C/u⌋, ≤ max_sequences);
//     with T(k) the model's pass time, capacity = k·u / T(k) for the k
//     that maximises it with T(k) ≤ TTFT.
//   - u > C: one prompt is chunked over ⌈u/C⌉ full passes, T = Σ chunk
//     times (each chunk priced with the context before it as its
//     prefix); capacity = u / T, feasible if T ≤ TTFT.
//
// Queueing is not priced (as in Dynamo, whose profile measures TTFT at an
// idle engine): a worker run at this capacity queues.
func prefillCapacity(p *pool, isl, hit, ttft float64) (tokPerS float64, ok bool) {
	n := int(math.Round(isl))
	switch {
	case n <= 0:
		return math.Inf(1), true
	case n > 1<<30: // beyond any model: provision the most
		return 0, false
	}
	cached := min(max(int(math.Round(isl*hit)), 0), n)
	u := n - cached
	if u <= 0 {
		return math.Inf(1), true
	}
	c := p.MaxBatchedTokens
	var t float64
	k := 1
	if c <= 0 || c >= u {
		kmax := maxBatch
		if c > 0 {
			kmax = min(kmax, c/u)
		}
		if p.MaxSeqs > 0 {
			kmax = min(kmax, p.MaxSeqs)
		}
		k, t, ok = bestBatch(kmax, func(k int) float64 { return p.Scale.Prefill(p.Model, k, n, cached).Ms() }, ttft)
	} else {
		t = chunkedPrefillMs(p, u, cached, c)
		ok = t <= ttft
	}
	if t <= 0 {
		return math.Inf(1), true
	}
	return float64(k*u) / t * 1000, ok
}

// chunkedPrefillMs prices one prompt's u uncached tokens (after cached
// ones) in chunks of c tokens, one chunk a pass.
func chunkedPrefillMs(p *pool, u, cached, c int) float64 {
	chunk := func(j int) float64 {
		start := cached + j*c
		return p.Scale.Prefill(p.Model, 1, start+c, start).Ms()
	}
	full, rem := u/c, u%c
	var t float64
	if full <= maxChunks {
		for j := range full {
			t += chunk(j)
		}
	} else {
		// The midpoints of maxChunks equal slices of the prompt.
		for i := range maxChunks {
			t += chunk((2*i + 1) * full / (2 * maxChunks))
		}
		t *= float64(full) / maxChunks
	}
	if rem > 0 {
		start := cached + full*c
		t += p.Scale.Prefill(p.Model, 1, start+rem, start).Ms()
	}
	return t
}

// decodeCapacity is the output tokens per second one worker generates
// with the ITL SLA kept. A sequence holds ctx ≈ ISL + OSL/2 tokens on
// average over its life; the batch b is at most max_sequences, the KV
// cache's ⌊KV tokens / ctx⌋ and max_batched_tokens (a decode step
// schedules a token per sequence). With step(b) the model's decode step
// and A the accept length (tokens per decode forward: 1 without
// speculation), a token's ITL is step(b)/A, and
//
//	capacity = b·A / step(b)   for the b that maximises it with step(b)/A ≤ ITL.
func decodeCapacity(p *pool, isl, osl, accept, itl float64) (tokPerS float64, ok bool) {
	ctx := int(math.Round(isl + osl/2))
	if ctx > 1<<30 {
		return 0, false
	}
	ctx = max(ctx, 1)
	a := max(accept, 1)
	kmax := maxBatch
	if p.MaxSeqs > 0 {
		kmax = min(kmax, p.MaxSeqs)
	}
	if p.KVTokens > 0 {
		kmax = min(kmax, p.KVTokens/ctx)
	}
	if p.MaxBatchedTokens > 0 {
		kmax = min(kmax, p.MaxBatchedTokens)
	}
	b, t, ok := bestBatch(kmax, func(b int) float64 { return p.Scale.Decode(p.Model, b, b*ctx, ctx, p.KVTokens).Ms() }, float64(itl*a))
	if p.KVTokens > 0 && ctx > p.KVTokens {
		ok = false // one sequence does not fit the cache
	}
	if t <= 0 {
		return math.Inf(1), ok
	}
	return float64(float64(b)*a) / t * 1000, ok
}

// forecast is the traffic throughput-based scaling plans for.
type forecast struct {
	rate, isl, osl float64 // req/s, mean tokens
	hit, accept    float64 // KV hit rate 0..1, accept length ≥ 1
}

// throughputWant is what each pool needs for f (before the GPU budget),
// with a reason per pool.
func (pl *Planner) throughputWant(f forecast) (want []int, parts []string) {
	want = make([]int, len(pl.pools))
	for i := range pl.pools {
		p := &pl.pools[i]
		prefillTok := float64(f.rate*f.isl) * (1 - f.hit)
		decodeTok := float64(f.rate * f.osl)
		var need float64
		feasible := true
		frac := func(demand, capacity float64, ok bool) float64 {
			feasible = feasible && ok
			if demand <= 0 {
				return 0
			}
			return demand / capacity
		}
		var what string
		switch p.role {
		case prefill:
			c, ok := prefillCapacity(p, f.isl, f.hit, pl.cfg.TTFTMs)
			need = frac(prefillTok, c, ok)
			what = fmt.Sprintf("%s req/s × %s ISL", num(f.rate), num(f.isl))
		case decode:
			c, ok := decodeCapacity(p, f.isl, f.osl, f.accept, pl.cfg.ITLMs)
			need = frac(decodeTok, c, ok)
			what = fmt.Sprintf("%s req/s × %s OSL", num(f.rate), num(f.osl))
		default:
			cp, okp := prefillCapacity(p, f.isl, f.hit, pl.cfg.TTFTMs)
			cd, okd := decodeCapacity(p, f.isl, f.osl, f.accept, pl.cfg.ITLMs)
			need = frac(prefillTok, cp, okp) + frac(decodeTok, cd, okd)
			what = fmt.Sprintf("%s req/s × %s ISL / %s OSL", num(f.rate), num(f.isl), num(f.osl))
		}
		want[i] = p.workersFor(need)
		part := fmt.Sprintf("%s needs %d %s worker%s", what, want[i], p.Name, plural(want[i]))
		if !feasible {
			part += " (SLA out of reach even at batch 1)"
		}
		parts = append(parts, part)
	}
	return want, parts
}

// workersFor is ⌈need⌉, at least the pool's minimum (a hair of rounding
// below an integer does not add a worker). It is not capped at what the
// GPU budget holds (fitBudget shares that out by want) beyond maxGPUs,
// which keeps GPU sums from overflowing.
func (p *pool) workersFor(need float64) int {
	if !(need > 0) { // also NaN
		return p.min
	}
	if need >= maxGPUs {
		return maxGPUs
	}
	return max(int(math.Ceil(need-1e-9)), p.min)
}
