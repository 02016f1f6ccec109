package sim

import (
	"math"
	"testing"

	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// breakdownsAddUp checks every request of rep: one with a first token has
// TTFT parts ≥ 0 that add up to its TTFT to the nanosecond (each part is
// a difference of integer-nanosecond times), one without has none. It
// returns how many requests lost time to a preemption before their first
// token.
func breakdownsAddUp(t *testing.T, rep *report.Report) (preempted int) {
	t.Helper()
	ns := func(ms float64) int64 { return int64(math.Round(ms * 1e6)) }
	withToken := 0
	for _, r := range rep.Requests() {
		if r.TTFTMs != nil && r.TerminalStatus == "completed" {
			withToken++
		}
		b := r.TTFTBreakdownMs
		if (r.TTFTMs == nil) != (b == nil) {
			t.Fatalf("request %d: TTFT %v, breakdown %v", r.UUID, r.TTFTMs, b)
		}
		if b == nil {
			continue
		}
		var sum int64
		for _, p := range b.Values() {
			if p < 0 {
				t.Fatalf("request %d: negative part in %+v", r.UUID, *b)
			}
			sum += ns(p)
		}
		if sum != ns(*r.TTFTMs) {
			t.Fatalf("request %d: parts %+v add up to %d ns, TTFT is %d ns", r.UUID, *b, sum, ns(*r.TTFTMs))
		}
		if b.Preemption > 0 {
			preempted++
		}
	}
	s := rep.TTFTBreakdown
	if s == nil {
		if withToken > 0 {
			t.Fatalf("no ttft_breakdown section with %d requests completed with a token", withToken)
		}
		return preempted
	}
	sum := 0.0
	for _, p := range s.Parts {
		sum += p.MeanMs
	}
	// The section's means are exact (from nanosecond sums); the summary's
	// comes from a running mean, so they agree to rounding.
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }
	if s.Requests != withToken || !near(sum, s.MeanTTFTMs) || !near(s.MeanTTFTMs, rep.Summary[schema.TTFT.Key(schema.Mean)]) {
		t.Fatalf("section: %d requests, means add up to %v, mean TTFT %v (summary %v)", s.Requests, sum, s.MeanTTFTMs, rep.Summary[schema.TTFT.Key(schema.Mean)])
	}
	return preempted
}

// The breakdown adds up to TTFT for every request of whole-trace runs on
// every engine: the three cores, both G1 pools, the roofline with its
// frontend latency and async scheduling, and pools small enough to
// preempt (vLLM: some before their first token) or retract (SGLang). Disaggregated runs are
// checked in TestDisaggConservation.
func TestTTFTBreakdownWholeTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("whole trace")
	}
	trace := sharedTrace(t, "mooncake/conversation_trace.jsonl")
	for _, tc := range []struct {
		name, config string
		sets         []string
		preempts     bool
	}{
		{"vllm", benchConfig, nil, false},
		{"vllm kvbm", benchConfig, []string{"engine.workers.aggregated.kv_cache.g1_backend=kvbm"}, false},
		{"trtllm", benchConfig, []string{"engine.backend=trtllm"}, false},
		{"sglang", benchConfig, []string{"engine.backend=sglang"}, false},
		{"roofline async", benchConfigRoofline, []string{"engine.workers.aggregated.scheduler.async_scheduling=true"}, false},
		{"vllm small pool", benchConfig, []string{"engine.workers.aggregated.kv_cache.capacity.blocks=200"}, true},
		// SGLang retracts only decoding requests, and a prompt decodes in
		// the pass that completes it, so none loses time before its first
		// token; the run exercises the retractions' re-admissions.
		{"sglang small pool", benchConfig, []string{"engine.backend=sglang", "engine.workers.aggregated.kv_cache.capacity.blocks=200"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Predict(Inputs{Config: []byte(tc.config), Sets: tc.sets, Trace: trace, TraceName: "conversation_trace.jsonl", CapturePerRequest: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			n := breakdownsAddUp(t, rep)
			if tc.preempts && n == 0 {
				t.Errorf("no request was preempted before its first token (%v preemptions in all)", rep.Summary[schema.NumPreemptions])
			}
			t.Logf("%d requests preempted before their first token", n)
		})
	}
}
