package recommend

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Batch is how many candidates each step of TPE suggests. It is a
// constant, not the parallelism: what the search suggests may depend only
// on what it has seen, so a seed gives the same ledger on 1 or 64 workers.
// Exhaustive and random search depend on nothing seen and suggest every
// trial at once, so no worker waits at a batch's end.
const Batch = 4

// searcher suggests candidates (as space indices) from what it has seen.
type searcher interface {
	// next returns up to n candidates to evaluate after seen.
	next(seen []Entry, n int) []int
	// batch is how many to ask for next (given seen candidates so far).
	batch(seen int) int
}

func (*exhaustive) batch(int) int { return math.MaxInt }
func (*random) batch(int) int     { return math.MaxInt }
func (t *tpe) batch(seen int) int {
	if seen < t.startup {
		return t.startup - seen
	}
	return Batch
}

// newSearcher picks the strategy: the whole space in order when it fits
// the trials (or exhaustive is asked for), else seeded random search or
// TPE ("bayesian").
func newSearcher(sp *Space) (searcher, string) {
	z := sp.Spec.Optimizer
	size := sp.Size()
	if size <= z.MaxTrials || z.Algorithm == "exhaustive" {
		return &exhaustive{}, "exhaustive"
	}
	r := &random{size: size, rng: rand.New(rand.NewPCG(z.Seed, 0x72616e646f6d)), seen: map[int]bool{}} // "random"
	if z.Algorithm == "random" {
		return r, "random"
	}
	startup := max(5, min(20, z.MaxTrials/5))
	return &tpe{sp: sp, startup: startup, warm: r, seed: z.Seed}, "bayesian"
}

type exhaustive struct{ i int }

func (e *exhaustive) next(_ []Entry, n int) []int {
	out := make([]int, n)
	for k := range out {
		out[k] = e.i
		e.i++
	}
	return out
}

// random samples the space without replacement (rejection: the trials are
// far fewer than the candidates here).
type random struct {
	size int
	rng  *rand.Rand
	seen map[int]bool
}

func (r *random) next(_ []Entry, n int) []int {
	out := make([]int, 0, n)
	for len(out) < n && len(r.seen) < r.size {
		i := r.rng.IntN(r.size)
		if !r.seen[i] {
			r.seen[i] = true
			out = append(out, i)
		}
	}
	return out
}

// tpe is a small Tree-structured Parzen Estimator over categorical
// dimensions (Bergstra et al. 2011, as Optuna's default sampler): after a
// random warm-up, the seen candidates split into the best quarter (by
// score; infeasible ones are never good) and the rest, each dimension gets
// a smoothed categorical density for each group, and of a few dozen
// candidates drawn from the good densities the one with the highest
// l(x)/g(x) is suggested. A suggestion already seen is served from the
// ledger's cache, as AISimulate does.
type tpe struct {
	sp      *Space
	startup int
	warm    *random
	seed    uint64
	step    uint64
}

const (
	tpeGamma   = 0.25
	tpeSamples = 32
)

func (t *tpe) next(seen []Entry, n int) []int {
	if len(seen) < t.startup {
		return t.warm.next(seen, min(n, t.startup-len(seen)))
	}
	t.step++
	rng := rand.New(rand.NewPCG(t.seed, t.step))
	var obs []Entry
	done := map[int]bool{}
	for _, e := range seen {
		if !e.CacheHit {
			obs = append(obs, e)
			done[e.Index] = true
		}
	}
	// Best first; infeasible and unscored ones last, in evaluation order.
	slices.SortStableFunc(obs, func(a, b Entry) int { return cmpScore(b, a) })
	ngood := max(1, int(math.Ceil(tpeGamma*float64(len(obs)))))
	for ngood > 1 && !scored(obs[ngood-1]) {
		ngood--
	}
	dims := t.sp.Dims
	good, bad := make([][]float64, len(dims)), make([][]float64, len(dims))
	for d := range dims {
		good[d], bad[d] = make([]float64, len(dims[d].Values)), make([]float64, len(dims[d].Values))
	}
	for i, e := range obs {
		c := t.sp.At(e.Index)
		for d, v := range c {
			if i < ngood && scored(e) {
				good[d][v]++
			} else {
				bad[d][v]++
			}
		}
	}
	for d := range dims { // Laplace smoothing, normalized
		k := float64(len(dims[d].Values))
		sg, sb := sum(good[d]), sum(bad[d])
		for v := range good[d] {
			good[d][v] = (good[d][v] + 1) / (sg + k)
			bad[d][v] = (bad[d][v] + 1) / (sb + k)
		}
	}
	out := make([]int, 0, n)
	for len(out) < n {
		best, bestScore := -1, math.Inf(-1)
		for range tpeSamples {
			c := make(Candidate, len(dims))
			s := 0.0
			for d := range dims {
				c[d] = draw(rng, good[d])
				s += math.Log(good[d][c[d]]) - math.Log(bad[d][c[d]])
			}
			i := t.sp.Index(c)
			if done[i] || slices.Contains(out, i) {
				s -= 1e6 // prefer something new; a repeat is a cache hit
			}
			if s > bestScore {
				best, bestScore = i, s
			}
		}
		out = append(out, best)
	}
	return out
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// draw samples an index from the distribution p (it sums to 1).
func draw(rng *rand.Rand, p []float64) int {
	u := rng.Float64()
	for i, x := range p {
		if u < x {
			return i
		}
		u -= x
	}
	return len(p) - 1
}

func scored(e Entry) bool { return e.Status == Feasible && e.Score != nil }

// cmpScore orders entries by score (feasible and scored above the rest),
// then fewer GPUs, then space index: a total order, so rankings are
// deterministic.
func cmpScore(a, b Entry) int {
	sa, sb := scored(a), scored(b)
	switch {
	case sa != sb:
		if sa {
			return 1
		}
		return -1
	case sa && *a.Score != *b.Score:
		if *a.Score > *b.Score {
			return 1
		}
		return -1
	case a.tie != b.tie:
		if a.tie > b.tie {
			return 1
		}
		return -1
	case a.UsedGPUs != b.UsedGPUs:
		if a.UsedGPUs < b.UsedGPUs {
			return 1
		}
		return -1
	case a.Index != b.Index:
		if a.Index < b.Index {
			return 1
		}
		return -1
	}
	return 0
}
