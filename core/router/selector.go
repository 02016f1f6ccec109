package router

import (
	"errors"
	"math"
	"math/rand/v2"

	"github.com/dynosim/dynosim-web/internal/detmath"
)

// CostConfig holds the KV router's cost knobs (spec §8.7, Dynamo's
// KvRouterConfig). DefaultCostConfig gives the reference defaults.
type CostConfig struct {
	OverlapScoreCredit        float64 // blocks of prefill credited per matched device block
	OverlapScoreCreditDecay   float64 // 0: off; else the credit shrinks on workers with excess prefill
	PrefillLoadScale          float64 // weight of the prefill term against decode blocks
	DecodeActiveRequestWeight float64 // cost per active request
	SharedCacheMultiplier     float64 // credit per prompt block in a shared cache beyond the device's
	HostCacheHitWeight        float64 // credit per prompt block in the worker's G2 beyond its G1 match
	DiskCacheHitWeight        float64 // credit per prompt block in G3 beyond its G1 and G2 match
	TrackPrefillTokens        bool    // charge prefill load (off: the prefill term is 0)
	DecodeWorker              bool    // a decode pool: overlap credits decode blocks instead
	Temperature               float64 // 0: cheapest, ties at random; > 0: softmax over costs
}

// DefaultCostConfig is KvRouterConfig::default.
func DefaultCostConfig() CostConfig {
	return CostConfig{OverlapScoreCredit: 1, PrefillLoadScale: 1, TrackPrefillTokens: true, HostCacheHitWeight: 0.75, DiskCacheHitWeight: 0.25}
}

// Candidate is one eligible (worker, rank) as the cost function sees it.
type Candidate struct {
	Placement
	// NoLoad: the router tracks nothing on it (its raw prefill is the
	// request's own blocks).
	NoLoad        bool
	Cached        int     // overlap tokens credited to the request here
	DeviceOverlap float64 // matched device blocks
	SharedHits    float64 // prompt blocks found in a shared cache (0 without one)
	HostOverlap   float64 // prompt blocks after DeviceOverlap the worker's G2 holds (lower-tier KV events)
	DiskOverlap   float64 // prompt blocks after those a G3 holds
	ActivePrefill int     // tracked uncached prompt tokens not yet prefill-complete
	DecodeBlocks  int     // potential decode blocks after admission (PotentialDecodeBlocks)
	Requests      int     // active requests
	Overloaded    bool    // skipped by Select
}

// PotentialDecodeBlocks is a worker's decode blocks if the request of isl
// tokens were admitted there: its active blocks plus the request's blocks
// not already held by its active sequences. Untracked, every block of the
// request counts; tracked, the full blocks not shared (additional) plus a
// partial tail block, which no sequence can share.
func PotentialDecodeBlocks(active, isl, blockSize int, tracked bool, additional int) int {
	if !tracked {
		return active + (isl+blockSize-1)/blockSize
	}
	tail := 0
	if isl%blockSize != 0 {
		tail = 1
	}
	return active + additional + tail
}

// Cost is the cost of placing a request of isl tokens (block size bs) on
// c; minPrefill is the least active prefill among the candidates (for the
// credit decay).
func (k *CostConfig) Cost(isl, bs int, c *Candidate, minPrefill int) float64 {
	requests := k.DecodeActiveRequestWeight * float64(c.Requests)
	decode := float64(c.DecodeBlocks)
	if k.DecodeWorker && !k.TrackPrefillTokens && k.OverlapScoreCredit > 0 {
		return max(decode-k.OverlapScoreCredit*c.DeviceOverlap, 0) + requests
	}
	if !k.TrackPrefillTokens {
		return decode + requests
	}
	var raw float64
	if c.NoLoad {
		raw = float64(isl) / float64(bs)
	} else {
		raw = float64(c.ActivePrefill+max(isl-c.Cached, 0)+c.Cached) / float64(bs)
	}
	decay := 1.0
	if k.OverlapScoreCreditDecay > 0 {
		if blocks := (isl + bs - 1) / bs; blocks > 0 {
			excess := float64(c.ActivePrefill-minPrefill) / float64(bs)
			decay = 1 / (1 + k.OverlapScoreCreditDecay*excess/float64(blocks))
		}
	}
	credit := k.OverlapScoreCredit*decay*c.DeviceOverlap + k.SharedCacheMultiplier*max(c.SharedHits-c.DeviceOverlap, 0)
	if c.HostOverlap > 0 || c.DiskOverlap > 0 {
		credit += k.HostCacheHitWeight*c.HostOverlap + k.DiskCacheHitWeight*c.DiskOverlap
	}
	return k.PrefillLoadScale*max(raw-credit, 0) + decode + requests
}

// ErrAllOverloaded is returned when every eligible worker is overloaded.
var ErrAllOverloaded = errors.New("all eligible workers overloaded")

// Select returns the index of the chosen candidate: overloaded ones are
// skipped; at temperature 0 the cheapest, ties broken uniformly at random
// by rng (never by worker id); above 0 a softmax draw over the costs.
// costs is scratch space, returned for reuse; an overloaded candidate's
// cost is +Inf there.
func (k *CostConfig) Select(isl, bs int, cands []Candidate, rng *rand.Rand, costs []float64) (int, []float64, error) {
	minPrefill := math.MaxInt
	for i := range cands {
		if !cands[i].Overloaded {
			minPrefill = min(minPrefill, cands[i].ActivePrefill)
		}
	}
	if minPrefill == math.MaxInt {
		return -1, costs, ErrAllOverloaded
	}
	costs = costs[:0]
	for i := range cands {
		c := math.Inf(1)
		if !cands[i].Overloaded {
			c = k.Cost(isl, bs, &cands[i], minPrefill)
		}
		costs = append(costs, c)
	}
	if k.Temperature > 0 {
		return softmaxSample(costs, k.Temperature, rng.Float64()), costs, nil
	}
	return cheapest(costs, rng), costs, nil
}

// cheapest is the index of the least cost; among ties a uniform choice
// (reservoir sampling: the k-th tie replaces the pick with probability 1/k).
func cheapest(costs []float64, rng *rand.Rand) int {
	best, ties := 0, 1
	for i := 1; i < len(costs); i++ {
		switch {
		case math.IsInf(costs[i], 1):
			// overloaded: never chosen
		case math.IsInf(costs[best], 1):
			best, ties = i, 1
		case costs[i] < costs[best]:
			best, ties = i, 1
		case costs[i] == costs[best]:
			ties++
			if rng.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return best
}

// softmaxSample draws a row with p_i ∝ exp(−(c_i − c_min)/((c_max − c_min)·T))
// for the uniform u: the first row whose cumulative probability reaches u.
// Equal costs are uniform; a range that overflows is normalized by the
// largest magnitude first.
func softmaxSample(costs []float64, t, u float64) int {
	lo, hi, n := math.Inf(1), math.Inf(-1), 0
	for _, c := range costs {
		if !math.IsInf(c, 1) { // +Inf: overloaded, probability 0
			lo, hi, n = min(lo, c), max(hi, c), n+1
		}
	}
	if lo == hi { // uniform over the finite ones
		k := min(int(u*float64(n)), n-1)
		for i, c := range costs {
			if !math.IsInf(c, 1) {
				if k == 0 {
					return i
				}
				k--
			}
		}
	}
	scale := 1.0
	if math.IsInf(hi-lo, 0) {
		scale = max(math.Abs(lo), math.Abs(hi))
	}
	lo, hi = lo/scale, hi/scale
	w := make([]float64, len(costs))
	sum := 0.0
	for i, c := range costs {
		if !math.IsInf(c, 1) {
			w[i] = detmath.Exp(-(c/scale - lo) / ((hi - lo) * t))
			sum += w[i]
		}
	}
	cum, last := 0.0, 0
	for i := range w {
		if w[i] == 0 {
			continue // overloaded
		}
		cum += w[i] / sum
		if cum >= u {
			return i
		}
		last = i
	}
	return last
}
