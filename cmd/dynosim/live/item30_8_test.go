package live

import (
	"context"
	"io"
	"strings"
	"testing"
)

// Issue 30 item 8: vLLM's `priority` request field is honoured, not
// ignored: under scheduler.policy fcfs a non-zero priority is a 400 naming
// the key (vLLM: "Priority scheduling is not enabled"), under priority it
// is served; a value outside int32 is a 400 naming the field.
func TestItem30_8LivePriorityField(t *testing.T) {
	const fcfs = "engine: {workers: {aggregated: {kv_cache: {capacity: {type: fixed, blocks: 64}}}}}\n"
	const prio = "engine: {workers: {aggregated: {scheduler: {policy: priority}, kv_cache: {capacity: {type: fixed, blocks: 64}}}}}\n"
	for _, tc := range []struct {
		name, cfg, priority string
		status              int
		want                string
	}{
		{"fcfs, priority 0", fcfs, "0", 200, "[DONE]"},
		{"fcfs, priority 3", fcfs, "3", 400, "engine.workers.aggregated.scheduler.policy is fcfs"},
		{"priority, priority -2", prio, "-2", 200, "[DONE]"},
		{"priority, priority 2^40", prio, "1099511627776", 400, "priority: must be an integer in"},
		{"priority, priority 1.5", prio, "1.5", 400, "priority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, hs := start(t, tc.cfg, Options{Speedup: MaxSpeedup})
			resp := post(t, context.Background(), hs.URL+"/v1/completions", `{"prompt":"hello there","max_tokens":3,"stream":true,"priority":`+tc.priority+`}`)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
				t.Errorf("answered %d %.300s, want %d with %q", resp.StatusCode, b, tc.status, tc.want)
			}
		})
	}
}
