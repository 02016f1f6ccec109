package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// stepTrace is a load step: rate r for T seconds, 3r for T, r for T; each
// request 1,024 prompt tokens (no shared prefix) and 512 output tokens.
func stepTrace(r, T float64) []byte {
	var b strings.Builder
	h := 0
	for _, ph := range []struct{ from, rate float64 }{{0, r}, {T, 3 * r}, {2 * T, r}} {
		for t := ph.from; t < ph.from+T-1e-9; t += 1 / ph.rate {
			fmt.Fprintf(&b, `{"timestamp":%.3f,"input_length":1024,"output_length":512,"hash_ids":[%d,%d]}`+"\n", t*1000, h, h+1)
			h += 2
		}
	}
	return []byte(b.String())
}

// stepConfig starts one Llama-3.1-8B worker on H100 (the roofline) under a
// load-based planner (5 s ticks) against a 500 ms / 50 ms SLA.
const stepConfig = `
traffic:
  source: {type: trace, format: mooncake, paths: [step.jsonl], block_size: 512}
  load: {type: trace_timestamps}
engine:
  workers:
    aggregated:
      parallelism: {replicas: 1}
planner: {policy: enabled, scaling_policy: load_180_5}
evaluation: {sla: {ttft_ms: 500, itl_ms: 50}}
`

func stepRun(t *testing.T, sets ...string) *report.Report {
	t.Helper()
	rep, err := Predict(Inputs{Config: []byte(stepConfig), Sets: sets, Trace: stepTrace(12, 120), TraceName: "step.jsonl"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// workersAt is the pool's provisioned workers at t ms.
func workersAt(p *report.PlannerReport, t float64) int {
	n := 0
	for _, w := range p.Workers {
		if w.TMs <= t {
			n = w.Active + w.Starting + w.Draining
		}
	}
	return n
}

// A load step (12 → 36 → 12 requests/s at 120 s and 240 s): load-based
// scaling adds workers within a few intervals of the step, holds them
// through it, and gives them back after it.
func TestPlannerLoadStep(t *testing.T) {
	rep := stepRun(t)
	p := rep.Planner
	if got := workersAt(p, 119_999); got != 1 {
		t.Fatalf("%d workers before the step, want 1: %+v", got, p.Workers)
	}
	up := -1.0
	for _, w := range p.Workers {
		if w.TMs >= 120_000 && w.Active+w.Starting > 1 && up < 0 {
			up = w.TMs
		}
	}
	if up < 0 || up > 120_000+4*5000 {
		t.Errorf("first scale-up at %v ms, want within 4 ticks of the step at 120 s", up)
	}
	peak := 0
	for ms := 120_000.0; ms < 240_000; ms += 1000 {
		n := workersAt(p, ms)
		if n < peak {
			t.Errorf("gave a worker back during the step, at %v ms (%d after %d)", ms, n, peak)
			break
		}
		peak = max(peak, n)
	}
	if peak < 3 {
		t.Errorf("peak %d workers during the step, want ≥ 3", peak)
	}
	if end := workersAt(p, 360_000); end != 1 {
		t.Errorf("%d workers at the end, want back to 1: %+v", end, p.Workers)
	}
	if rep.Summary[schema.MeanGPUs] >= float64(peak) || rep.Summary[schema.GPUHours] <= 0 {
		t.Errorf("mean GPUs %v, peak %d, GPU-hours %v", rep.Summary[schema.MeanGPUs], peak, rep.Summary[schema.GPUHours])
	}
	t.Logf("workers: %+v", p.Workers)
}

// The longer a new worker takes to start, the more of the step misses the
// SLA.
func TestPlannerStartupSweep(t *testing.T) {
	var miss []float64
	for _, s := range []int{0, 60, 120, 300} {
		rep := stepRun(t, fmt.Sprintf("engine.workers.aggregated.startup_seconds=%d", s))
		m := 1 - rep.Summary[schema.GoodputCompletedRequests]/rep.Summary[schema.NumRequests]
		miss = append(miss, m)
		t.Logf("startup %3d s: %.1f %% of requests miss the SLA, %.3f GPU-hours", s, 100*m, rep.Summary[schema.GPUHours])
	}
	for i := 1; i < len(miss); i++ {
		if miss[i] < miss[i-1] {
			t.Errorf("SLA misses %v: not rising with the startup time", miss)
		}
	}
	if miss[3] < miss[0]+0.2 {
		t.Errorf("SLA misses %v: a 300 s startup should miss far more than none", miss)
	}
}

// Planner runs are deterministic: the same inputs give the same bytes.
func TestPlannerDeterministic(t *testing.T) {
	a, b := stepRun(t), stepRun(t)
	ja, _ := a.JSON()
	jb, _ := b.JSON()
	strip := func(j []byte) string {
		s := string(j)
		for _, k := range report.WallClockKeys {
			i := strings.Index(s, `"`+k+`"`)
			if i >= 0 {
				e := strings.IndexAny(s[i:], ",\n")
				s = s[:i] + s[i+e:]
			}
		}
		return s
	}
	if strip(ja) != strip(jb) {
		t.Error("two planner runs of the same inputs differ")
	}
}
