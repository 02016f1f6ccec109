package sim

import (
	"testing"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/replay"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/workload"
	"github.com/dynosim/dynosim-web/timing"
)

// clock is an Observer that keeps each request's first and last token.
type clock struct {
	replay.NopObserver
	first, last []timing.Time
	tokens      []int
	done        int
	workers     int // workers that ran a pass
}

func (c *clock) grow(id uint64) {
	for uint64(len(c.first)) < id {
		c.first, c.last, c.tokens = append(c.first, 0), append(c.last, 0), append(c.tokens, 0)
	}
}
func (c *clock) PassEnded(w int, _ *engine.Pass)      { c.workers = max(c.workers, w+1) }
func (c *clock) Terminal(uint64, timing.Time, string) { c.done++ }
func (c *clock) Token(id uint64, _, at timing.Time, _ uint32) {
	c.grow(id)
	if c.tokens[id-1] == 0 {
		c.first[id-1] = at
	}
	c.tokens[id-1]++
	c.last[id-1] = at
}

// feedLive submits wl's requests to a live deployment of cfg at their
// arrival times, as a wall-clock driver would, and runs it dry.
func feedLive(tb testing.TB, cfg string, wl *workload.Workload, n int) *clock {
	c := &clock{}
	l, err := NewLive(Inputs{Config: []byte(cfg)}, c)
	if err != nil {
		tb.Fatal(err)
	}
	var prompt []uint32
	for k := range n {
		s := &wl.Sessions[wl.ByStart[k]]
		if _, err := l.RunUntil(s.Start); err != nil {
			tb.Fatal(err)
		}
		prompt = wl.Prompt(prompt[:0], &s.Turns[0])
		if _, err := l.Submit(prompt, s.Turns[0].Output, s.Turns[0].Priority); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := l.RunUntil(timing.FromMs(1e9)); err != nil {
		tb.Fatal(err)
	}
	if c.done != n {
		tb.Fatalf("%d of %d requests ended", c.done, n)
	}
	return c
}

// The live deployment of a config, fed a trace's requests at their
// arrival times, emits every token when the offline prediction of the same
// config and trace says: live mode steps the same cores (here 3,000
// requests of the Azure conversation trace on 8 workers, roofline timing).
func TestLiveMatchesPredict(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole-deployment comparison")
	}
	data := sharedTrace(t, "azure/AzureLLMInferenceTrace_conv.csv")
	const n = 3000
	for _, tc := range []struct{ name, cfg string }{
		{"aggregated", benchConfigRoofline},
		{"disaggregated", disaggConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			livePredicts(t, Inputs{Config: []byte(tc.cfg + "traffic: {stop: {requests: 3000}}\n"), Trace: data, TraceName: "conv.csv"}, tc.cfg, n)
		})
	}
}

// The planner scales a live deployment as it scales the prediction: a
// load step (12 → 36 → 12 requests/s) fed live gets the same tokens at the
// same times, workers added and removed as predicted.
func TestLivePlanner(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole-deployment comparison")
	}
	rep, c := livePredicts(t, Inputs{Config: []byte(stepConfig), Trace: stepTrace(12, 120), TraceName: "step.jsonl"}, stepConfig, 0)
	if peak := workersAt(rep.Planner, 200_000); peak < 2 || c.workers < peak {
		t.Fatalf("the live deployment reached %d workers, the prediction %d", c.workers, peak)
	}
}

// livePredicts predicts in, feeds its first n requests (0: all) to a live
// deployment of cfg, and fails unless every token comes when predicted.
func livePredicts(t *testing.T, in Inputs, cfg string, n int) (*report.Report, *clock) {
	t.Helper()
	in.CapturePerRequest = true
	rep, err := Predict(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		n = p.wl.Requests()
	}
	c := feedLive(t, cfg, p.wl, n)
	for _, r := range rep.Requests() {
		i := r.UUID - 1
		if c.tokens[i] != r.OutputLength || c.first[i].Ms() != *r.FirstTokenMs || c.last[i].Ms() != *r.LastTokenMs {
			t.Fatalf("request %d: live %d tokens %v..%v ms, predicted %d tokens %v..%v ms", r.UUID,
				c.tokens[i], c.first[i].Ms(), c.last[i].Ms(), r.OutputLength, *r.FirstTokenMs, *r.LastTokenMs)
		}
	}
	return rep, c
}

// BenchmarkLiveAzureTrace drives the whole Azure conversation trace through
// a live deployment (Submit at each arrival, RunUntil between): compare it
// with BenchmarkAzureConvTrace, the same work replayed offline.
func BenchmarkLiveAzureTrace(b *testing.B) {
	data := sharedTrace(b, "azure/AzureLLMInferenceTrace_conv.csv")
	p, err := Prepare(Inputs{Config: []byte(benchConfig), Trace: data, TraceName: "conv.csv"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		feedLive(b, benchConfig, p.wl, p.wl.Requests())
	}
}
