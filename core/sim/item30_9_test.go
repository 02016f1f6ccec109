package sim

import (
	"fmt"
	"math"
	"testing"

	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/report/schema"
)

// item30_9Trace: request 1 asks for no output (it completes in its
// prefill pass with a token-less terminal, mocker.md §2.6), request 2
// for 8 tokens.
const item30_9Trace = `{"timestamp": 0, "input_length": 1024, "output_length": 0, "hash_ids": [1, 2]}
{"timestamp": 0, "input_length": 1024, "output_length": 8, "hash_ids": [3, 4]}
`

const item30_9Config = `
traffic:
  source: {type: trace, format: mooncake, block_size: 512}
engine:
  workers:
    aggregated:
      parallelism: {replicas: 1}
      kv_cache: {block_size: 64, capacity: {type: fixed, blocks: 1024}}
      timing: {type: polynomial}
`

// item30_9Run runs the two-request trace on backend with the SLA set.
func item30_9Run(t *testing.T, backend string, sla []string) *report.Report {
	t.Helper()
	in := Inputs{Config: []byte(item30_9Config), Sets: append([]string{"engine.backend=" + backend}, sla...),
		Trace: []byte(item30_9Trace), TraceName: "zero.jsonl", CapturePerRequest: true}
	rep, err := Predict(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// Issue 30 item 9: a completed request with zero output tokens writes null
// for first_token_ms, ttft_ms and e2e_latency_ms in requests.jsonl, as the
// reference's record does (its e2e is last token − arrival, mocker.md
// §8.8); the summary's e2e statistics leave it out (it adds no latency
// samples), and goodput still judges it by terminal time − arrival, good
// only under an e2e-only SLA. Before: e2e_latency_ms was terminal −
// arrival.
func TestItem30_9ZeroOutputNulls(t *testing.T) {
	for _, backend := range []string{"vllm", "sglang", "trtllm"} {
		// The zero-output request's terminal time − arrival and the other
		// request's e2e, from a run without an SLA (an SLA changes no
		// timing, only the goodput count).
		base := item30_9Run(t, backend, nil)
		recs := base.Requests()
		if len(recs) != 2 {
			t.Fatalf("%s: %d records", backend, len(recs))
		}
		zero, other := recs[0], recs[1]
		if zero.TerminalStatus != "completed" || zero.OutputLength != 0 || zero.TerminalTimeMs == nil || zero.FirstAdmitMs == nil {
			t.Fatalf("%s: zero-output request: %+v", backend, zero)
		}
		for _, f := range []struct {
			name string
			v    *float64
		}{{"first_token_ms", zero.FirstTokenMs}, {"last_token_ms", zero.LastTokenMs}, {"ttft_ms", zero.TTFTMs},
			{"ttst_ms", zero.TTSTMs}, {"itl_ms", zero.ITLMs}, {"e2e_latency_ms", zero.E2ELatencyMs}} {
			if f.v != nil {
				t.Errorf("%s: zero-output request: %s = %v, want null", backend, f.name, *f.v)
			}
		}
		if zero.TTFTBreakdownMs != nil {
			t.Errorf("%s: zero-output request has a TTFT breakdown %+v", backend, *zero.TTFTBreakdownMs)
		}
		if other.OutputLength != 8 || other.E2ELatencyMs == nil {
			t.Fatalf("%s: the 8-token request: %+v", backend, other)
		}
		term := *zero.TerminalTimeMs - zero.ArrivalTimeMs
		if term <= 0 {
			t.Fatalf("%s: zero-output request ends at %v ms after arrival", backend, term)
		}
		// Both count as completed; only the 8-token request is an e2e
		// sample.
		s := base.Summary
		if s[schema.CompletedRequests] != 2 || s[schema.E2E.Key(schema.Mean)] != *other.E2ELatencyMs || s[schema.E2E.Key(schema.Min)] != *other.E2ELatencyMs {
			t.Errorf("%s: completed %v, e2e mean %v min %v; want 2 completed and e2e of the 8-token request only (%v)",
				backend, s[schema.CompletedRequests], s[schema.E2E.Key(schema.Mean)], s[schema.E2E.Key(schema.Min)], *other.E2ELatencyMs)
		}
		if !math.IsNaN(s[schema.GoodputCompletedRequests]) && s[schema.GoodputCompletedRequests] != 0 {
			t.Errorf("%s: goodput %v without an SLA", backend, s[schema.GoodputCompletedRequests])
		}

		t.Logf("%s: zero-output request: terminal − arrival %v ms, e2e_latency_ms %s; 8-token request e2e %v ms; summary mean e2e %v ms",
			backend, term, orNull(zero.E2ELatencyMs), *other.E2ELatencyMs, s[schema.E2E.Key(schema.Mean)])
		big := max(term, *other.E2ELatencyMs) * 2
		for _, tc := range []struct {
			name string
			sla  []string
			good float64 // goodput_completed_requests
		}{
			// e2e-only: judged by terminal − arrival, inclusive.
			{"e2e bound well above its terminal time", []string{fmt.Sprintf("evaluation.sla.e2e_ms=%v", big)}, 2},
			{"e2e bound at its terminal time", []string{fmt.Sprintf("evaluation.sla.e2e_ms=%v", term)}, 1 + b2f(*other.E2ELatencyMs <= term)},
			{"e2e bound just under its terminal time", []string{fmt.Sprintf("evaluation.sla.e2e_ms=%v", term*(1-1e-9))}, b2f(*other.E2ELatencyMs <= term*(1-1e-9))},
			// A TTFT or ITL bound: a token-less request cannot meet it.
			{"ttft and itl bounds", []string{fmt.Sprintf("evaluation.sla.ttft_ms=%v", big), fmt.Sprintf("evaluation.sla.itl_ms=%v", big)}, 1},
		} {
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				rep := item30_9Run(t, backend, tc.sla)
				if got := rep.Summary[schema.GoodputCompletedRequests]; got != tc.good {
					t.Errorf("goodput_completed_requests = %v, want %v (zero-output: terminal − arrival %v ms; other e2e %v ms)", got, tc.good, term, *other.E2ELatencyMs)
				}
				if r := rep.Requests()[0]; r.E2ELatencyMs != nil || r.TTFTMs != nil || r.FirstTokenMs != nil {
					t.Errorf("zero-output record under an SLA: e2e %s ttft %s first token %s, want null", orNull(r.E2ELatencyMs), orNull(r.TTFTMs), orNull(r.FirstTokenMs))
				}
			})
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func orNull(v *float64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}
