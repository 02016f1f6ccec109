package report

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// Issue 29 item 11: the planner section is bounded whatever the run's
// length (a 1 ms interval made a 212 MB report). Past MaxPlannerTicks
// ticks or MaxWorkerSteps steps a list keeps every other entry and its
// stride doubles: the listed ticks are those whose ordinal is a multiple
// of tick_stride, and still span the run; num_ticks counts them all; each
// pool's last step is listed and its peak counts every step; the same
// calls give the same bytes.
func TestItem11PlannerSectionBounded(t *testing.T) {
	const n = 100_000
	build := func() *PlannerReport {
		p := &PlannerReport{}
		built := 0
		for i := range n {
			at := timing.FromMs(float64(i) * 1000)
			p.Tick(i, func() PlannerTick {
				built++
				return PlannerTick{Tick: i, TMs: at.Ms(), Reason: "load: hold", Pools: []PlannerPool{{Pool: "prefill"}, {Pool: "decode"}}}
			})
			// Two pools oscillating, with a same-time replacement and a
			// spike to 9 workers once in the middle.
			p.Change(at, "prefill", WorkerCount{Active: 1 + i%3})
			p.Change(at, "prefill", WorkerCount{Active: 1 + i%3, Starting: i % 2})
			d := 2 + i%2
			if i == n/2+1 {
				d = 9
			}
			p.Change(at, "decode", WorkerCount{Active: d})
		}
		if built > 2*MaxPlannerTicks*18 { // ~log2(n/1024) halvings each rebuild at most 1024 records
			t.Errorf("built %d tick records for %d ticks: the skipped ones must not be built", built, n)
		}
		return p
	}
	p := build()
	if p.NumTicks != n || len(p.Ticks) > MaxPlannerTicks || len(p.Ticks) < MaxPlannerTicks/2 {
		t.Fatalf("num_ticks %d, %d ticks listed (bound %d)", p.NumTicks, len(p.Ticks), MaxPlannerTicks)
	}
	for k, tk := range p.Ticks {
		if tk.Tick%p.TickStride != 0 || k > 0 && tk.Tick != p.Ticks[k-1].Tick+p.TickStride {
			t.Fatalf("tick %d listed with stride %d after %d", tk.Tick, p.TickStride, p.Ticks[k-1].Tick)
		}
	}
	if last := p.Ticks[len(p.Ticks)-1].Tick; last < n-p.TickStride {
		t.Errorf("the listed ticks end at %d of %d: they must span the run", last, n)
	}
	f := p.finished()
	if len(f.Workers) > MaxWorkerSteps+2 || f.WorkerStepStride < 2 {
		t.Fatalf("%d worker steps listed, stride %d (bound %d)", len(f.Workers), f.WorkerStepStride, MaxWorkerSteps)
	}
	lastOf := func(pool string) WorkerStep {
		var w WorkerStep
		for _, s := range f.Workers {
			if s.Pool == pool {
				w = s
			}
		}
		return w
	}
	end := float64(n-1) * 1000
	if w := lastOf("prefill"); w.TMs != end || w.WorkerCount != (WorkerCount{Active: 1 + (n-1)%3, Starting: (n - 1) % 2}) {
		t.Errorf("prefill's last step %+v, want the run's last (%v ms)", w, end)
	}
	if w := lastOf("decode"); w.TMs != end || w.Active != 2+(n-1)%2 {
		t.Errorf("decode's last step %+v", w)
	}
	for k := 1; k < len(f.Workers); k++ {
		if f.Workers[k].TMs < f.Workers[k-1].TMs {
			t.Fatalf("steps out of time order at %d", k)
		}
	}
	if got := p.peak("decode"); got != 9 {
		t.Errorf("decode peak %d, want 9 (a step the stride skipped still counts)", got)
	}
	if got := p.peak("prefill"); got != 4 {
		t.Errorf("prefill peak %d, want 4", got)
	}
	var tb strings.Builder
	(&Report{Planner: f}).tablePlanner(&tb)
	if want := fmt.Sprintf("Planner: 100000 ticks (every %dth listed), prefill 1–4 workers, decode 2–9 workers", p.TickStride); !strings.HasPrefix(tb.String(), want) {
		t.Errorf("table line %q, want it to start %q", tb.String(), want)
	}
	a, _ := json.Marshal(f.Planner)
	b, _ := json.Marshal(build().finished().Planner)
	if string(a) != string(b) {
		t.Error("the same calls gave different bytes")
	}
	if len(a) > 512<<10 {
		t.Errorf("the section is %d bytes", len(a))
	}

	// A short run lists everything, as before the bound.
	q := &PlannerReport{}
	for i := range 5 {
		q.Tick(i, func() PlannerTick { return PlannerTick{Tick: i} })
		q.Change(timing.FromMs(float64(i)), "aggregated", WorkerCount{Active: 1 + i})
	}
	g := q.finished()
	if g.NumTicks != 5 || g.TickStride != 1 || len(g.Ticks) != 5 || g.WorkerStepStride != 1 || len(g.Workers) != 5 {
		t.Errorf("short run: %+v", g.Planner)
	}
	if !reflect.DeepEqual(g.Workers, q.Workers) {
		t.Error("finished changed a short run's steps")
	}
}
