package sim

import (
	"fmt"
	"testing"
)

// TestItem34_2StepAheadKVEvents: quiet passes that publish KV events (a
// decoded block stored, a block evicted) step ahead too, their events
// going to the KV router at once (replay/ahead.go); the report and the
// per-request records are byte for byte those of settling the cluster at
// every pass end, on every engine that publishes events and with the
// router queue (held requests keep their walks by the index's generations).
func TestItem34_2StepAheadKVEvents(t *testing.T) {
	trace := testTrace(t)
	kvr := "router: {policy: kv_router, kv: {%s}}\n"
	cfg := func(backend string, block, blocks int) string {
		return fmt.Sprintf(goldenBase, backend, "real", "{kind: none}", 1, block, "native", blocks)
	}
	cases := []struct{ name, cfg string }{
		{"vllm", cfg("vllm", 64, 2048) + fmt.Sprintf(kvr, "")},
		{"vllm_small_pool", cfg("vllm", 64, 700) + fmt.Sprintf(kvr, "")},
		{"trtllm", cfg("trtllm", 32, 4096) + fmt.Sprintf(kvr, "")},
		{"sglang", cfg("sglang", 16, 8192) + fmt.Sprintf(kvr, "")},
		{"queue_fcfs", cfg("vllm", 64, 2048) + fmt.Sprintf(kvr, "queue: {threshold: 0.5}")},
		{"queue_wspt", cfg("vllm", 64, 700) + fmt.Sprintf(kvr, "queue: {threshold: 0.3, policy: wspt}")},
		{"mtp", fmt.Sprintf(goldenBase, "vllm", "real", "{kind: mtp, num_speculative_tokens: 2, acceptance_rates: [0.8, 0.5]}", 1, 64, "native", 2048) + fmt.Sprintf(kvr, "")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkStepAhead(t, c.cfg, trace)
		})
	}
}
