package report

import (
	"math"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// Issue 30 item 9: the record of a completed zero-output request (the
// reference's H2 case: arrival 0, admitted at 5 with reuse 8, terminal at
// 25, mocker.md §8.8) has null first_token_ms, ttft_ms and e2e_latency_ms
// (the reference's e2e is last token − arrival, and there is no last
// token), keeps its terminal time, adds no e2e sample, and meets an
// e2e-only SLA by terminal − arrival. Before: e2e_latency_ms was 25.
func TestItem30_9ZeroOutputRecordNulls(t *testing.T) {
	const want = `{"uuid":1,"arrival_time_ms":0,"first_admit_ms":5,"first_token_ms":null,"last_token_ms":null,"terminal_time_ms":25,"ttft_ms":null,"ttst_ms":null,"itl_ms":null,"e2e_latency_ms":null,"input_length":32,"requested_output_length":0,"output_length":0,"reused_input_tokens":8,"worker":0,"dp_rank":0,"terminal_status":"completed","rejection_reason":null,"router_overlap_tokens":null,"router_queue_ms":0,"ttft_breakdown_ms":null}`
	for _, tc := range []struct {
		name string
		sla  SLA
		good float64 // goodput_completed_requests; -1: no goodput keys
	}{
		{"no SLA", SLA{}, -1},
		{"e2e bound above terminal − arrival", SLA{E2EMs: 30}, 1},
		{"e2e bound at terminal − arrival", SLA{E2EMs: 25}, 1},
		{"e2e bound under terminal − arrival", SLA{E2EMs: 24.5}, 0},
		{"ttft bound: no first token to meet it", SLA{TTFTMs: 1000}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCollector(1, 1, true)
			id := arrive(c, 0, 32, 0)
			c.Admit(id, ms(5), 8, false)
			c.Terminal(id, ms(25), "")
			rep := Build(c, RunInfo{Workers: []WorkerStats{{}}, ClockEnd: ms(25), SLA: tc.sla})
			if got := strings.TrimSpace(string(rep.RequestsJSONL())); got != want {
				t.Errorf("record:\n got %s\nwant %s", got, want)
			}
			s := rep.Summary
			// No e2e sample: the statistics of an empty distribution are
			// undefined (null), not terminal − arrival.
			if s[schema.CompletedRequests] != 1 || !math.IsNaN(s[schema.E2E.Key(schema.Mean)]) || !math.IsNaN(s[schema.E2E.Key(schema.P99)]) {
				t.Errorf("completed %v, e2e mean %v p99 %v: want 1 completed and no e2e sample", s[schema.CompletedRequests], s[schema.E2E.Key(schema.Mean)], s[schema.E2E.Key(schema.P99)])
			}
			good, ok := s[schema.GoodputCompletedRequests]
			if tc.good < 0 && ok {
				t.Errorf("goodput %v without an SLA", good)
			}
			if tc.good >= 0 && good != tc.good {
				t.Errorf("goodput_completed_requests = %v, want %v", good, tc.good)
			}
		})
	}
}
