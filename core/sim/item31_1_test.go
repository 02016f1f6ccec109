package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// Issue 31 item 1: the planner scales down and does not flap.
//
// The step load is built here as a mooncake trace (the trace format
// expresses it; the synthetic source has one rate and fixed lengths):
// Poisson arrivals at 2, 14 and 2 requests/s for 300, 600 and 600 s,
// prompts uniform in 1,500..3,000 tokens with no shared prefix, outputs
// uniform in 150..350 tokens. The seed is fixed, so the trace is too.
func item31Trace() []byte {
	r := rand.New(rand.NewPCG(31, 1))
	var b strings.Builder
	h, t := 0, 0.0
	for _, ph := range []struct{ rate, dur float64 }{{2, 300}, {14, 600}, {2, 600}} {
		end := t + ph.dur
		for {
			t += r.ExpFloat64() / ph.rate
			if t >= end {
				t = end
				break
			}
			isl := 1500 + r.IntN(1501)
			osl := 150 + r.IntN(201)
			nb := (isl + 511) / 512
			ids := make([]string, nb)
			for i := range ids {
				ids[i] = fmt.Sprint(h)
				h++
			}
			fmt.Fprintf(&b, `{"timestamp":%.3f,"input_length":%d,"output_length":%d,"hash_ids":[%s]}`+"\n", t*1000, isl, osl, strings.Join(ids, ","))
		}
	}
	return []byte(b.String())
}

// item31Config: Llama-3.1-8B on H100 (the default model and hardware),
// one worker starting in 60 s, load_180_5, SLA TTFT 500 ms / ITL 20 ms.
const item31Config = `
traffic:
  source: {type: trace, format: mooncake, paths: [step.jsonl], block_size: 512}
  load: {type: trace_timestamps}
engine:
  workers:
    aggregated:
      parallelism: {replicas: 1}
      startup_seconds: 60
planner: {policy: enabled, scaling_policy: load_180_5}
evaluation: {sla: {ttft_ms: 500, itl_ms: 20}}
`

const item31Static2 = `
traffic:
  source: {type: trace, format: mooncake, paths: [step.jsonl], block_size: 512}
  load: {type: trace_timestamps}
engine:
  workers:
    aggregated:
      parallelism: {replicas: 2}
evaluation: {sla: {ttft_ms: 500, itl_ms: 20}}
`

func item31Run(t *testing.T, cfg string, sets ...string) *report.Report {
	t.Helper()
	rep, err := Predict(Inputs{Config: []byte(cfg), Sets: sets, Trace: item31Trace(), TraceName: "step.jsonl"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// item31Figures are the measured figures of one planner run.
type item31Figures struct {
	up, down     float64   // first scale-up after the step, last return to one worker after the drop (ms; -1 none)
	adds, drains []float64 // tick times of +1 and −1 decisions
	minGap       float64   // shortest add → drain gap (ms; +Inf none)
}

func item31Measure(p *report.PlannerReport) item31Figures {
	f := item31Figures{up: -1, down: -1, minGap: math.Inf(1)}
	for _, w := range p.Workers {
		n := w.Active + w.Starting
		if w.TMs >= 300_000 && n > 1 && f.up < 0 {
			f.up = w.TMs
		}
	}
	prev := 1
	for _, tk := range p.Ticks {
		tg := tk.Pools[0].Target
		switch {
		case tg > prev:
			f.adds = append(f.adds, tk.TMs)
		case tg < prev:
			f.drains = append(f.drains, tk.TMs)
			if len(f.adds) > 0 {
				f.minGap = min(f.minGap, tk.TMs-f.adds[len(f.adds)-1])
			}
		}
		prev = tg
		if tk.TMs >= 900_000 && tg == 1 && f.down < 0 {
			f.down = tk.TMs
		}
		if tk.TMs >= 900_000 && tg > 1 {
			f.down = -1
		}
	}
	return f
}

func TestItem31_1StepLoad(t *testing.T) {
	static := item31Run(t, item31Static2)
	sGood, sGPUh := static.Summary[schema.GoodputCompletedRequests], static.Summary[schema.GPUHours]
	for _, tc := range []struct{ name, preset string }{
		{"load_180_5", "load_180_5"},
		{"hybrid_180_5", "hybrid_180_5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := item31Run(t, item31Config, "planner.scaling_policy="+tc.preset)
			p := rep.Planner
			f := item31Measure(p)
			good, gpuh := rep.Summary[schema.GoodputCompletedRequests], rep.Summary[schema.GPUHours]
			t.Logf("workers: %+v", p.Workers)
			t.Logf("adds at %v ms, drains at %v ms, first up %v ms, back to 1 at %v ms", f.adds, f.drains, f.up, f.down)
			t.Logf("GPU-hours %.3f vs static 2: %.3f; goodput %v vs %v (%.1f %%)", gpuh, sGPUh, good, sGood, 100*good/sGood)
			for _, tk := range p.Ticks {
				if tk.Action != "hold" {
					t.Logf("t=%5.0f s %s to %d (est ITL %s, observed %s ms): %s", tk.TMs/1000, tk.Action, tk.Pools[0].Target, fp(tk.EstITLMs), fp(tk.ObservedITLMs), tk.Reason)
				}
			}
			if f.up < 0 || f.up > 300_000+120_000 {
				t.Errorf("first scale-up at %v ms, want within 120 s of the step at 300 s", f.up)
			}
			if f.down < 0 || f.down > 900_000+300_000 {
				t.Errorf("back to one worker at %v ms, want within 300 s of the drop at 900 s", f.down)
			}
			if f.minGap < 120_000 {
				t.Errorf("a drain %v ms after an add, want ≥ 120 s", f.minGap)
			}
			if gpuh >= sGPUh {
				t.Errorf("GPU-hours %.3f, want fewer than static 2 workers' %.3f", gpuh, sGPUh)
			}
			if good < 0.85*sGood {
				t.Errorf("goodput %v, want ≥ 85 %% of static 2 workers' %v", good, sGood)
			}
		})
	}
}

func fp(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}
