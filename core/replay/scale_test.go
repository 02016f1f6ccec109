package replay

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/planner"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/timing"
)

// script is a planner that answers tick k with targets[k] (the last one
// after that) and ticks every 10 ms; it records what it saw.
type script struct {
	targets [][]int
	every   float64
	stuck   bool // answer a next tick that is not in the future
	seen    []planner.Snapshot
}

func (s *script) tick(snap planner.Snapshot) planner.Decision {
	s.seen = append(s.seen, snap)
	t := s.targets[min(snap.Tick, len(s.targets)-1)]
	next := snap.NowMs + s.every
	if s.stuck {
		next = snap.NowMs
	}
	return planner.Decision{Targets: t, NextMs: next, Reason: fmt.Sprint("script ", t)}
}

var scaleCfg = engine.Config{BlockSize: 4, NumBlocks: 256, MaxBatchedTokens: 64, MaxSeqs: 8, ChunkedPrefill: true, Model: timing.Fixed{Prefill: 10, Decode: 5}}

// scaled replays text on one aggregated pool of n workers under s, with
// new workers ready after startup.
func scaled(t *testing.T, text string, n int, startup timing.Time, s *script) *report.Report {
	t.Helper()
	sc := &Scaling{Tick: s.tick, FirstMs: s.every, Startup: []timing.Time{startup},
		New: []func(int) (*engine.Worker, error){func(int) (*engine.Worker, error) { return engine.NewWorker(scaleCfg, 1) }}}
	rep, err := Run(trace(t, text, 4), agg(workers(t, n, scaleCfg)), Options{Capture: true, Scaling: sc})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// rows is one 8-token request every gap ms from at, each decoding out tokens.
func rows(n int, at, gap float64, out int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s\n", row(at+float64(i)*gap, 8, out, 10*i+1, 10*i+2))
	}
	return b.String()
}

// A new worker gets a new id and takes requests only once its startup is
// over; the planner's report and the GPU-hours count it from its start.
func TestPlannerStartupDelaysRouting(t *testing.T) {
	s := &script{targets: [][]int{{2}}, every: 10}
	rep := scaled(t, rows(12, 0, 10, 4), 1, timing.FromMs(60), s)
	if len(rep.Workers) != 2 || *rep.Workers[1].AddedMs != 10 || rep.Workers[0].AddedMs != nil {
		t.Fatalf("workers %+v", rep.Workers)
	}
	for _, r := range rep.Requests() {
		if *r.Worker == 1 && r.ArrivalTimeMs < 70 {
			t.Errorf("request %d arrived at %v ms and ran on the worker that was ready at 70 ms", r.UUID, r.ArrivalTimeMs)
		}
	}
	if rep.Workers[1].Requests == 0 {
		t.Error("the new worker never served")
	}
	steps := rep.Planner.Workers
	if len(steps) < 3 || steps[1] != (report.WorkerStep{TMs: 10, Pool: "aggregated", WorkerCount: report.WorkerCount{Active: 1, Starting: 1}}) ||
		steps[2] != (report.WorkerStep{TMs: 70, Pool: "aggregated", WorkerCount: report.WorkerCount{Active: 2}}) {
		t.Errorf("worker steps %+v", steps)
	}
	end := rep.Summary["duration_ms"]
	want := (end + end - 10) / 3.6e6 // worker 0 all run, worker 1 from 10 ms
	if g := rep.Summary["gpu_hours"]; math.Abs(g-want) > 1e-12 {
		t.Errorf("gpu_hours %v, want %v", g, want)
	}
}

// Scale-down cancels pending startups first (highest ids), then drains the
// highest-id active worker; a drained worker takes no new request and
// leaves when its last one ends.
func TestPlannerCancelsStartupsThenDrains(t *testing.T) {
	// 10 ms: 1 → 2 (id 1 starts, ready at 30); 20: 4 (ids 2, 3 start);
	// 40: 1 → ids 3 and 2 cancelled (still starting), id 1 drains.
	s := &script{targets: [][]int{{2}, {4}, {4}, {1}}, every: 10}
	rep := scaled(t, rows(30, 0, 5, 12), 1, timing.FromMs(20), s)
	if len(rep.Workers) != 4 {
		t.Fatalf("%d workers, want 4", len(rep.Workers))
	}
	for _, id := range []int{2, 3} {
		w := rep.Workers[id]
		if w.Requests != 0 || *w.AddedMs != 20 || *w.RemovedMs != 40 {
			t.Errorf("cancelled startup %d: %+v", id, w)
		}
	}
	w1 := rep.Workers[1]
	if w1.RemovedMs == nil || *w1.RemovedMs <= 40 || rep.Workers[0].RemovedMs != nil {
		t.Fatalf("drained worker %+v, worker 0 %+v", w1, rep.Workers[0])
	}
	last := 0.0
	for _, r := range rep.Requests() {
		if *r.Worker == 1 {
			if r.ArrivalTimeMs > 40 { // one arriving at 40 is placed before the tick (ticks come after same-time settlement)
				t.Errorf("request %d placed on the draining worker at %v ms", r.UUID, r.ArrivalTimeMs)
			}
			last = max(last, *r.TerminalTimeMs)
		}
	}
	if *w1.RemovedMs != last {
		t.Errorf("drained worker removed at %v ms, its last request ended at %v ms", *w1.RemovedMs, last)
	}
	if c := rep.Summary["completed_requests"]; c != 30 {
		t.Errorf("%v requests completed", c)
	}
}

// Ticks come only in the future and only while work remains; the planner
// sees every live worker and the traffic of its interval.
func TestPlannerTicks(t *testing.T) {
	s := &script{targets: [][]int{{1}}, every: 10}
	rep := scaled(t, rows(5, 0, 10, 2), 1, 0, s)
	end := rep.Summary["duration_ms"]
	for i, snap := range s.seen {
		if snap.Tick != i || snap.NowMs != float64(10*(i+1)) || snap.NowMs > end+10 {
			t.Errorf("tick %d: %+v", i, snap)
		}
		if len(snap.Pools) != 1 || snap.Pools[0].Active != 1 || len(snap.Pools[0].Workers) != 1 {
			t.Errorf("tick %d pools %+v", i, snap.Pools)
		}
	}
	if n := len(s.seen); n == 0 || s.seen[n-1].NowMs > end {
		t.Errorf("%d ticks, the last after the work ended at %v ms", n, end)
	}
	served := 0
	for _, snap := range s.seen {
		served += snap.Traffic.Requests
	}
	if served == 0 || len(rep.Planner.Ticks) != len(s.seen) {
		t.Errorf("traffic %d requests over %d ticks (%d in the report)", served, len(s.seen), len(rep.Planner.Ticks))
	}
	// A planner that returns a time not in the future stops ticking.
	once := &script{targets: [][]int{{1}}, every: 10, stuck: true}
	scaled(t, rows(5, 0, 10, 2), 1, 0, once)
	if len(once.seen) != 1 {
		t.Errorf("%d ticks after a next tick that was not in the future", len(once.seen))
	}
}

// Scaled workers start cold: a prompt the first worker has cached is a
// miss on a new one.
func TestPlannerWorkersStartCold(t *testing.T) {
	cfg := scaleCfg
	cfg.PrefixCaching = true
	s := &script{targets: [][]int{{2}}, every: 10}
	sc := &Scaling{Tick: s.tick, FirstMs: 10, Startup: []timing.Time{0},
		New: []func(int) (*engine.Worker, error){func(int) (*engine.Worker, error) { return engine.NewWorker(cfg, 1) }}}
	text := row(0, 16, 2, 1, 2, 3, 4) + "\n" + row(50, 16, 2, 1, 2, 3, 4) + "\n" + row(60, 16, 2, 1, 2, 3, 4)
	rep, err := Run(trace(t, text, 4), agg(workers(t, 1, cfg)), Options{Capture: true, Scaling: sc})
	if err != nil {
		t.Fatal(err)
	}
	// Round robin sends the second request to the new worker, the third
	// back to the first: a miss there, a hit here.
	r := rep.Requests()
	if *r[1].Worker != 1 || r[1].ReusedInputTokens != 0 || *r[2].Worker != 0 || r[2].ReusedInputTokens == 0 {
		t.Errorf("requests %+v", r)
	}
}
