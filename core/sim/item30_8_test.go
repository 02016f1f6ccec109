package sim

import (
	"fmt"
	"strings"
	"testing"
)

// priorityTrace is a two-class Mooncake trace: n requests every gap ms,
// prompt 2048 tokens (unique blocks), 64 output tokens, the even ones
// priority 0 and the odd ones priority 10, plus extra on every row.
func priorityTrace(n int, gap float64, extra string) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"timestamp": %g, "input_length": 2048, "output_length": 64, "hash_ids": [%d, %d, %d, %d], "priority": %d%s}`+"\n",
			float64(i)*gap, 4*i, 4*i+1, 4*i+2, 4*i+3, 10*(i%2), extra)
	}
	return []byte(b.String())
}

// Issue 30 item 8: a trace field the run does not model is said so in the
// report's warnings (never ignored in silence): priority under
// scheduler.policy fcfs, strict_priority without the KV router's queue,
// policy_class always.
func TestItem30_8PriorityWarnings(t *testing.T) {
	const base = "traffic: {source: {type: trace, format: mooncake, paths: [t.jsonl], block_size: 512}}\n"
	for _, tc := range []struct {
		name, config, extra string
		want, not           []string
	}{
		{"fcfs", base, "", []string{"trace priority (100 requests) not modelled by the aggregated workers: engine.workers.aggregated.scheduler.policy is fcfs"}, []string{"strict_priority", "policy_class"}},
		{"priority", base + "engine: {workers: {aggregated: {scheduler: {policy: priority}}}}\n", "", nil, []string{"trace priority"}},
		{"router queue", base + "router: {policy: kv_router, kv: {queue: {threshold: 1}}}\n", `, "strict_priority": 1`, []string{"only the KV router's queue orders by it"}, []string{"strict_priority"}},
		{"strict without queue", base + "engine: {workers: {aggregated: {scheduler: {policy: priority}}}}\n", `, "strict_priority": 1`, []string{"trace strict_priority (200 requests) not modelled"}, []string{"trace priority"}},
		{"policy_class", base + "engine: {workers: {aggregated: {scheduler: {policy: priority}}}}\n", `, "policy_class": "batch"`, []string{"trace policy_class (200 requests) not modelled"}, nil},
		{"disaggregated", base + "engine: {mode: disaggregated, workers: {decode: {scheduler: {policy: priority}}}}\n", "", []string{"not modelled by the prefill workers: engine.workers.prefill.scheduler.policy is fcfs"}, []string{"decode workers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Predict(Inputs{Config: []byte(tc.config), Trace: priorityTrace(200, 50, tc.extra), TraceName: "t.jsonl"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(rep.Warnings, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("warnings %q\nwant %q", rep.Warnings, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(all, w) {
					t.Errorf("warnings %q\nwant none with %q", rep.Warnings, w)
				}
			}
		})
	}
}
