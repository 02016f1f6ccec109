package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/timing"
)

// The planner's part of the report (spec §9.1): every tick's decision with
// its reasons and estimates, and the workers per pool over time.

// PlannerReport is the report's planner section, with what the loop
// needs to record it (Tick, Change). Its lists are bounded whatever the
// run's length (issue 29 item 11: a 1 ms interval made a 212 MB report):
// past MaxPlannerTicks ticks or MaxWorkerSteps steps a list keeps every
// other entry and its stride doubles, as the time series coarsen their
// buckets (series.go). Integer ordinals decide what stays, so the section
// is the same bytes on every front end.
type PlannerReport struct {
	schema.Planner
	pools []stepPool // per pool, in the order of their first step
}

// The planner section's bounds: ~0.5 MB of ticks and ~0.2 MB of steps at
// most, and a plot of either still has 512 points or more.
const (
	MaxPlannerTicks = 1024
	MaxWorkerSteps  = 2048
)

// stepPool is what Change needs of one pool: its latest step (listed or
// not) and the fewest and most workers it ever had provisioned.
type stepPool struct {
	name     string
	n        int // the pool's steps so far, listed or not: the next one's ordinal
	last     WorkerCount
	lastMs   float64
	listed   bool // the latest step is in Workers
	lo, peak int  // over the steps before the latest
}

// PlannerTick is schema.PlannerTick: the section's shape lives in the schema.
type PlannerTick = schema.PlannerTick

// PlannerPool is schema.PlannerPool: the section's shape lives in the schema.
type PlannerPool = schema.PlannerPool

// WorkerCount is schema.WorkerCount: the section's shape lives in the schema.
type WorkerCount = schema.WorkerCount

// WorkerStep is schema.WorkerStep: the section's shape lives in the schema.
type WorkerStep = schema.WorkerStep

// Tick counts the planner's tick with ordinal tick (0, 1, … in order)
// and lists it, built by record, if its ordinal is a multiple of the
// stride (record is not called otherwise).
func (p *PlannerReport) Tick(tick int, record func() PlannerTick) {
	p.NumTicks++
	p.TickStride = max(p.TickStride, 1)
	if tick%p.TickStride != 0 {
		return
	}
	p.Ticks = append(p.Ticks, record())
	if len(p.Ticks) <= MaxPlannerTicks {
		return
	}
	p.TickStride *= 2
	kept := p.Ticks[:0]
	for _, t := range p.Ticks {
		if t.Tick%p.TickStride == 0 {
			kept = append(kept, t)
		}
	}
	clear(p.Ticks[len(kept):]) // the dropped ticks' pools and reasons
	p.Ticks = kept
}

// Change records pool's workers from t on; a change at the same time as
// the last one of the pool replaces it, and one that changes nothing is
// not a step.
func (p *PlannerReport) Change(t timing.Time, pool string, c WorkerCount) {
	sp := p.stepPool(pool)
	ms := t.Ms()
	if sp.n > 0 && ms == sp.lastMs {
		sp.last = c
		if sp.listed {
			for i := len(p.Workers) - 1; i >= 0; i-- {
				if p.Workers[i].Pool == pool {
					p.Workers[i].WorkerCount = c
					break
				}
			}
		}
		return
	}
	if sp.n > 0 && c == sp.last {
		return
	}
	if sp.n > 0 { // the latest step is final now: count it
		sp.lo, sp.peak = sp.extent()
	}
	p.WorkerStepStride = max(p.WorkerStepStride, 1)
	sp.last, sp.lastMs, sp.listed = c, ms, sp.n%p.WorkerStepStride == 0
	sp.n++
	if !sp.listed {
		return
	}
	p.Workers = append(p.Workers, WorkerStep{TMs: ms, Pool: pool, WorkerCount: c})
	if len(p.Workers) > MaxWorkerSteps {
		p.thinSteps()
	}
}

// thinSteps doubles the step stride: each pool keeps its listed steps of
// even rank (their ordinals are rank × the old stride).
func (p *PlannerReport) thinSteps() {
	p.WorkerStepStride *= 2
	rank := make([]int, len(p.pools))
	kept := p.Workers[:0]
	for _, w := range p.Workers {
		k := p.poolIndex(w.Pool)
		if rank[k]%2 == 0 {
			kept = append(kept, w)
		}
		rank[k]++
	}
	p.Workers = kept
	for i := range p.pools {
		sp := &p.pools[i]
		sp.listed = sp.listed && (sp.n-1)%p.WorkerStepStride == 0
	}
}

// extent is the fewest and most workers the pool had provisioned over
// its steps, the latest included.
func (sp *stepPool) extent() (lo, hi int) {
	n := sp.last.Active + sp.last.Starting + sp.last.Draining
	if sp.n <= 1 {
		return n, n
	}
	return min(sp.lo, n), max(sp.peak, n)
}

// stepPool is pool's entry, added on its first step.
func (p *PlannerReport) stepPool(pool string) *stepPool {
	if k := p.poolIndex(pool); k >= 0 {
		return &p.pools[k]
	}
	p.pools = append(p.pools, stepPool{name: pool})
	return &p.pools[len(p.pools)-1]
}

// poolIndex is pool's index in p.pools, -1 if it has no step yet.
func (p *PlannerReport) poolIndex(pool string) int {
	for k := range p.pools {
		if p.pools[k].name == pool {
			return k
		}
	}
	return -1
}

// finished is the section as the report shows it: its strides at least 1,
// and each pool's latest step listed even when its stride skipped it, so
// the series ends at the workers the run ended with. p itself is left as
// it is (the loop may go on recording).
func (p *PlannerReport) finished() *PlannerReport {
	f := *p
	f.TickStride, f.WorkerStepStride = max(p.TickStride, 1), max(p.WorkerStepStride, 1)
	f.Workers = slices.Clone(p.Workers)
	for _, sp := range p.pools {
		if sp.n > 0 && !sp.listed {
			f.Workers = append(f.Workers, WorkerStep{TMs: sp.lastMs, Pool: sp.name, WorkerCount: sp.last})
		}
	}
	slices.SortStableFunc(f.Workers, func(a, b WorkerStep) int { return cmp.Compare(a.TMs, b.TMs) })
	return &f
}

// AddWorker gives the series a column for a worker added during the run.
func (s *Series) AddWorker() {
	s.workers++
	for i := range s.buckets {
		b := &s.buckets[i]
		b.running, b.waiting = append(b.running, 0), append(b.waiting, 0)
		b.kv, b.samples = append(b.kv, 0), append(b.samples, 0)
	}
}

// peak is the most workers pool had provisioned at once.
func (p *PlannerReport) peak(pool string) int {
	if k := p.poolIndex(pool); k >= 0 {
		_, hi := p.pools[k].extent()
		return hi
	}
	n := 0 // a section built without Change (tests)
	for _, w := range p.Workers {
		if w.Pool == pool {
			n = max(n, w.Active+w.Starting+w.Draining)
		}
	}
	return n
}

// tablePlanner adds a planner run's line to the console table: its ticks,
// the workers each pool had (fewest and most provisioned) and the GPU-hours.
func (r *Report) tablePlanner(b *strings.Builder) {
	p := r.Planner
	if p == nil {
		return
	}
	var pools []string
	for _, sp := range p.pools {
		lo, hi := sp.extent()
		pools = append(pools, fmt.Sprintf("%s %d–%d workers", sp.name, lo, hi))
	}
	if len(p.pools) == 0 { // a section built without Change (tests)
		pools = stepRanges(p.Workers)
	}
	ticks := fmt.Sprintf("%d ticks", max(p.NumTicks, len(p.Ticks)))
	if p.TickStride > 1 {
		ticks += fmt.Sprintf(" (every %d%s listed)", p.TickStride, ordinalSuffix(p.TickStride))
	}
	fmt.Fprintf(b, "Planner: %s, %s, %s GPU-hours, %s GPUs on average\n", ticks, strings.Join(pools, ", "), num(p.GPUHours), num(deref(p.MeanGPUs)))
}

// stepRanges are the fewest and most workers of each pool in steps.
func stepRanges(steps []WorkerStep) []string {
	var pools []string
	seen := map[string]bool{}
	for _, w := range steps {
		if seen[w.Pool] {
			continue
		}
		seen[w.Pool] = true
		lo, hi := -1, 0
		for _, x := range steps {
			if x.Pool == w.Pool {
				n := x.Active + x.Starting + x.Draining
				if lo < 0 || n < lo {
					lo = n
				}
				hi = max(hi, n)
			}
		}
		pools = append(pools, fmt.Sprintf("%s %d–%d workers", w.Pool, lo, hi))
	}
	return pools
}

// ordinalSuffix is the English suffix of n's ordinal (strides are powers
// of two: 2nd, 4th, 8th…).
func ordinalSuffix(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return "th"
	case n%10 == 1:
		return "st"
	case n%10 == 2:
		return "nd"
	case n%10 == 3:
		return "rd"
	}
	return "th"
}
