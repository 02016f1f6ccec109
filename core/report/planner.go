package report

import (
	"fmt"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/timing"
)

// The planner's part of the report (spec §9.1): every tick's decision with
// its reasons and estimates, and the workers per pool over time.

// PlannerReport is the report's planner section, with what the loop
// needs to record it (Change).
type PlannerReport struct{ schema.Planner }

// PlannerTick is schema.PlannerTick: the section's shape lives in the schema.
type PlannerTick = schema.PlannerTick

// PlannerPool is schema.PlannerPool: the section's shape lives in the schema.
type PlannerPool = schema.PlannerPool

// WorkerCount is schema.WorkerCount: the section's shape lives in the schema.
type WorkerCount = schema.WorkerCount

// WorkerStep is schema.WorkerStep: the section's shape lives in the schema.
type WorkerStep = schema.WorkerStep

// Change records pool's workers from t on; a change at the same time as
// the last one of the pool replaces it.
func (p *PlannerReport) Change(t timing.Time, pool string, c WorkerCount) {
	for i := len(p.Workers) - 1; i >= 0; i-- {
		if w := &p.Workers[i]; w.Pool == pool {
			if w.TMs == t.Ms() {
				w.WorkerCount = c
				return
			}
			if w.WorkerCount == c {
				return
			}
			break
		}
	}
	p.Workers = append(p.Workers, WorkerStep{TMs: t.Ms(), Pool: pool, WorkerCount: c})
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
	n := 0
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
	seen := map[string]bool{}
	for _, w := range p.Workers {
		if seen[w.Pool] {
			continue
		}
		seen[w.Pool] = true
		lo, hi := -1, 0
		for _, x := range p.Workers {
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
	fmt.Fprintf(b, "Planner: %d ticks, %s, %s GPU-hours, %s GPUs on average\n", len(p.Ticks), strings.Join(pools, ", "), num(p.GPUHours), num(deref(p.MeanGPUs)))
}
