package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// Issue 31 item 2: host offload that pays. On the first 4,000 requests of
// the conversation trace on 2 KVBM workers, a G2 of 100,000 blocks per
// worker under write-through (offload: on_store, the default under
// engine.semantics real) lowers mean TTFT against G1 alone while raising
// prefix reuse at least 1.2×; offload on evict (the reference's, today's
// behaviour) raises reuse as much but costs TTFT, because admissions wait
// for the evicted blocks' copies. Both with polynomial timing on 16,000
// G1 blocks and with the default timing on H100, G1 sized from memory.
func TestItem31_2OnStoreConversation(t *testing.T) {
	if testing.Short() {
		t.Skip("4,000 requests, six runs")
	}
	trace := sharedTrace(t, "mooncake/conversation_trace.jsonl")
	config := func(g1, timing, tiers string) string {
		return `
traffic: {stop: {requests: 4000}}
engine:
  workers:
    aggregated:
      parallelism: {replicas: 2}
      kv_cache: {g1_backend: kvbm, capacity: ` + g1 + tiers + `}
` + timing
	}
	type result struct{ ttft, reuse float64 }
	run := func(cfg string) result {
		rep, err := Predict(Inputs{Config: []byte(cfg), Trace: trace, TraceName: "conversation_trace.jsonl"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := result{ttft: rep.Summary[schema.TTFT.Key(schema.Mean)], reuse: rep.Summary[schema.PrefixCacheReusedRatio]}
		var links []string
		for _, kt := range rep.KVTiers {
			for _, l := range kt.Links {
				links = append(links, fmt.Sprintf("%s %.1f%%", l.Link, 100*l.Utilization))
			}
		}
		t.Logf("mean TTFT %8.1f ms  reuse %.4f  %s", r.ttft, r.reuse, strings.Join(links, ", "))
		return r
	}
	for _, tc := range []struct{ name, g1, timing string }{
		{"polynomial, 16,000 G1 blocks", "{blocks: 16000}", "      timing: {type: polynomial}\n"},
		{"H100 default timing, G1 from memory", "{type: default}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g1 := run(config(tc.g1, tc.timing, ""))
			onEvict := run(config(tc.g1, tc.timing, ", tiers: {offload: on_evict, g2: {blocks: 100000}}"))
			onStore := run(config(tc.g1, tc.timing, ", tiers: {g2: {blocks: 100000}}")) // the default: on_store
			if !(onStore.ttft < g1.ttft && onStore.reuse >= 1.2*g1.reuse) {
				t.Errorf("on_store: TTFT %v ms, reuse %v; G1 alone: TTFT %v ms, reuse %v", onStore.ttft, onStore.reuse, g1.ttft, g1.reuse)
			}
			if !(onStore.ttft < onEvict.ttft) {
				t.Errorf("on_store TTFT %v ms not below on_evict's %v ms", onStore.ttft, onEvict.ttft)
			}
		})
	}
}
