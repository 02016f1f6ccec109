package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/metrics"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// This file: the planner panel of a run with the planner in the loop
// (report.planner): the summary line, the decisions (ticks whose target
// changed a pool's workers) as a table, and what public/planner.js needs to
// mark them on its plots. Pure Go, tested natively.

// plannerSection is the report's planner section. gpu_hours is read as a
// pointer so that a report without it (an older core) shows "—", not 0.
type plannerSection struct {
	schema.Planner
	GPUHours *float64 `json:"gpu_hours"`
}

// provisioned are the workers that hold GPUs: active, starting or draining.
func provisioned(c schema.WorkerCount) int { return c.Active + c.Starting + c.Draining }

// PlannerView is the planner panel of the shown run.
type PlannerView struct {
	Ticks     int     // the ticks the planner ran (num_ticks; a long run lists only some, see tick_stride)
	GPUHours  float64 // NaN: not in the report
	MeanGPUs  float64
	Pools     []PlannerRange
	Decisions []PlannerDecision
	Summary   string // the summary line
}

// PlannerRange is the fewest and most workers a pool had provisioned.
type PlannerRange struct {
	Pool     string
	Min, Max int
}

// PlannerDecision is a tick that changed a pool's target: From is the
// pool's workers (active and starting) before it, To the target.
type PlannerDecision struct {
	Index  int // the tick's position in report.planner.ticks
	Tick   int
	TMs    float64
	Pool   string
	From   int
	To     int
	Reason string
	// Action is scale_up or scale_down, the pool's own direction (the
	// tick's planner.ticks[].action is over all pools): the table marks
	// the way down as well as the way up (issue 31 item 1).
	Action string
}

// maxDecisionRows is the most decisions the table lists (a day-long trace
// with 5 s ticks can make thousands; the plots draw every one).
const maxDecisionRows = 200

// plannerView derives the panel from the report's planner section (nil:
// no planner, no panel).
func plannerView(p *plannerSection) *PlannerView {
	if p == nil {
		return nil
	}
	v := &PlannerView{Ticks: max(p.NumTicks, len(p.Ticks)), GPUHours: math.NaN(), MeanGPUs: math.NaN()}
	if p.GPUHours != nil {
		v.GPUHours = *p.GPUHours
	}
	if p.MeanGPUs != nil {
		v.MeanGPUs = *p.MeanGPUs
	}
	v.Pools = plannerRanges(p)
	v.Decisions = plannerDecisions(p)
	v.Summary = plannerSummary(v)
	return v
}

// plannerRanges are the pools in the order they first appear, each with
// its fewest and most provisioned workers over the run (from the workers
// series; from the ticks when the series is empty).
func plannerRanges(p *plannerSection) []PlannerRange {
	var out []PlannerRange
	at := map[string]int{}
	add := func(pool string, n int) {
		i, ok := at[pool]
		if !ok {
			at[pool] = len(out)
			out = append(out, PlannerRange{Pool: pool, Min: n, Max: n})
			return
		}
		out[i].Min, out[i].Max = min(out[i].Min, n), max(out[i].Max, n)
	}
	for _, w := range p.Workers {
		add(w.Pool, provisioned(w.WorkerCount))
	}
	if len(p.Workers) == 0 {
		for _, t := range p.Ticks {
			for _, q := range t.Pools {
				add(q.Pool, q.Active+q.Starting+q.Draining)
			}
		}
	}
	return out
}

// plannerDecisions lists the ticks whose target differs from the pool's
// workers before the tick: the previous tick's target, or for a pool's
// first tick its active and starting workers in the series before the
// tick (the first step when there is none before it). Starting workers
// count: a worker that becomes ready changes no decision.
func plannerDecisions(p *plannerSection) []PlannerDecision {
	var out []PlannerDecision
	last := map[string]int{}
	for i, t := range p.Ticks {
		for _, q := range t.Pools {
			prev, ok := last[q.Pool]
			if !ok {
				prev, ok = workersBefore(p.Workers, q.Pool, t.TMs)
			}
			last[q.Pool] = q.Target
			if ok && q.Target != prev {
				a := "scale_down" // the pool's own direction: a tick's action is over all pools
				if q.Target > prev {
					a = "scale_up"
				}
				out = append(out, PlannerDecision{Index: i, Tick: t.Tick, TMs: t.TMs, Pool: q.Pool, From: prev, To: q.Target, Reason: t.Reason, Action: a})
			}
		}
	}
	return out
}

// workersBefore is pool's active and starting workers just before t: the
// last step before t, else its first step (false: the pool has none).
func workersBefore(steps []schema.WorkerStep, pool string, t float64) (int, bool) {
	n, ok := 0, false
	for _, w := range steps {
		if w.Pool != pool {
			continue
		}
		if ok && w.TMs >= t {
			break
		}
		n, ok = w.Active+w.Starting, true
		if w.TMs >= t {
			break
		}
	}
	return n, ok
}

// plannerSummary is the line above the plots: "68 ticks, 9 scaling
// decisions · 0.42 GPU·h · 2.71 GPUs on average (time-weighted) · workers
// provisioned: 2–5".
func plannerSummary(v *PlannerView) string {
	parts := []string{fmt.Sprintf("%s tick%s, %s scaling decision%s", metrics.Format(float64(v.Ticks)), plural(v.Ticks),
		metrics.Format(float64(len(v.Decisions))), plural(len(v.Decisions))),
		formatKey(schema.GPUHours, v.GPUHours), formatKey(schema.MeanGPUs, v.MeanGPUs) + " on average (time-weighted)"}
	if math.IsNaN(v.GPUHours) {
		parts[1] = "— GPU·h"
	}
	if math.IsNaN(v.MeanGPUs) {
		parts[2] = "— GPUs on average (time-weighted)"
	}
	if len(v.Pools) > 0 {
		var ws []string
		for _, r := range v.Pools {
			s := workerRange(r)
			if len(v.Pools) > 1 {
				s = r.Pool + " " + s
			}
			ws = append(ws, s)
		}
		parts = append(parts, "workers provisioned: "+strings.Join(ws, ", "))
	}
	return strings.Join(parts, " · ")
}

// workerRange is "2–5" (or "3" when the pool never changed).
func workerRange(r PlannerRange) string {
	if r.Min == r.Max {
		return strconv.Itoa(r.Min)
	}
	return strconv.Itoa(r.Min) + "–" + strconv.Itoa(r.Max)
}

// Shown are the decisions the table lists.
func (v *PlannerView) Shown() []PlannerDecision {
	if len(v.Decisions) > maxDecisionRows {
		return v.Decisions[:maxDecisionRows]
	}
	return v.Decisions
}

// DecisionsTitle heads the decisions table.
func (v *PlannerView) DecisionsTitle() string {
	n := len(v.Decisions)
	if n > maxDecisionRows {
		return fmt.Sprintf("Scaling decisions (the first %d of %s)", maxDecisionRows, metrics.Format(float64(n)))
	}
	return fmt.Sprintf("Scaling decisions (%d)", n)
}

// GPUHoursAttr is the exact GPU-hours for tests and scripts ("" when absent).
func (v *PlannerView) GPUHoursAttr() string {
	if math.IsNaN(v.GPUHours) {
		return ""
	}
	return strconv.FormatFloat(v.GPUHours, 'g', -1, 64)
}

// Time is the decision's simulated time.
func (d PlannerDecision) Time() string { return metrics.Duration(d.TMs) }

// Change is "2 → 3 (+1)".
func (d PlannerDecision) Change() string {
	return fmt.Sprintf("%d → %d (%+d)", d.From, d.To, d.To-d.From)
}

// markersJSON is the decisions as planner.js marks them: [{index, pool,
// from, to}] (the reason is the tick's, read from the report).
func markersJSON(ds []PlannerDecision) string {
	type marker struct {
		Index int    `json:"index"`
		Pool  string `json:"pool"`
		From  int    `json:"from"`
		To    int    `json:"to"`
	}
	ms := make([]marker, len(ds))
	for i, d := range ds {
		ms[i] = marker{d.Index, d.Pool, d.From, d.To}
	}
	b, _ := json.Marshal(ms)
	return string(b)
}
