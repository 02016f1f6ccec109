package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// tiersConfig is the conversation trace on 2 vLLM workers whose KVBM G1 of
// 4,000 64-token blocks is too small for the trace's reuse; tiers is the
// kv_cache.tiers value ("" for none).
func tiersConfig(tiers string) string {
	t := ""
	if tiers != "" {
		t = ", tiers: " + tiers
	}
	return `
engine:
  workers:
    aggregated:
      parallelism: {replicas: 2}
      kv_cache: {g1_backend: kvbm, block_size: 64, capacity: {blocks: 4000}` + t + `}
`
}

// On the conversation trace with a G1 too small for its reuse, a large G2
// raises total prefix reuse and lowers mean TTFT against G1 alone; with a
// small G2, a G3 on top helps again. Every request's TTFT breakdown,
// onboarding included, still adds up.
func TestTiersConversationTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("whole trace")
	}
	trace := sharedTrace(t, "mooncake/conversation_trace.jsonl")
	type result struct{ reuse, ttft, onboarding float64 }
	run := func(tiers string) result {
		rep, err := Predict(Inputs{Config: []byte(tiersConfig(tiers)), Trace: trace, TraceName: "conversation_trace.jsonl", CapturePerRequest: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		breakdownsAddUp(t, rep)
		r := result{reuse: rep.Summary[schema.PrefixCacheReusedRatio], ttft: rep.Summary[schema.TTFT.Key(schema.Mean)]}
		var links []string
		for _, p := range rep.TTFTBreakdown.Parts {
			if p.Part == "onboarding" {
				r.onboarding = p.MeanMs
			}
		}
		if (tiers == "") != (len(rep.KVTiers) == 0) {
			t.Fatalf("tiers %q: kv_tiers %v", tiers, rep.KVTiers)
		}
		for _, kt := range rep.KVTiers {
			for _, l := range kt.Links {
				links = append(links, fmt.Sprintf("%s %.1f%%", l.Link, 100*l.Utilization))
			}
		}
		t.Logf("%-40s reuse %.4f  mean TTFT %9.1f ms  onboarding %7.1f ms  %s", tiers, r.reuse, r.ttft, r.onboarding, strings.Join(links, ", "))
		return r
	}
	g1 := run("")
	g2 := run("{g2: {blocks: 40000}}")
	small := run("{g2: {blocks: 4000}}")
	g3 := run("{g2: {blocks: 4000}, g3: {blocks: 100000}}")
	if !(g2.reuse > g1.reuse && g2.ttft < g1.ttft) {
		t.Errorf("G2: reuse %v, TTFT %v; G1 alone: reuse %v, TTFT %v", g2.reuse, g2.ttft, g1.reuse, g1.ttft)
	}
	if !(g3.reuse > small.reuse && g3.ttft < small.ttft) {
		t.Errorf("G3 on a small G2: reuse %v, TTFT %v; the small G2 alone: reuse %v, TTFT %v", g3.reuse, g3.ttft, small.reuse, small.ttft)
	}
	if g1.onboarding != 0 || !(g2.onboarding > 0) || !(g3.onboarding > 0) {
		t.Errorf("onboarding parts: G1 %v, G2 %v, G3 %v", g1.onboarding, g2.onboarding, g3.onboarding)
	}
}

// Tier runs are deterministic: the same inputs give the same bytes, with
// G2, G3 and G4 all taking blocks and serving hits.
func TestTiersDeterministic(t *testing.T) {
	trace := sharedTrace(t, "mooncake/conversation_trace.jsonl")
	cfg := []byte(tiersConfig("{offload_batch_blocks: 4, g2: {blocks: 300}, g3: {blocks: 900}, g4: {enabled: true}}") + `
traffic: {stop: {requests: 400}}
`)
	cfg = bytes.Replace(cfg, []byte("capacity: {blocks: 4000}"), []byte("capacity: {blocks: 600}"), 1)
	var out [2][]byte
	for i := range out {
		rep, err := Predict(Inputs{Config: cfg, Trace: trace, TraceName: "conversation_trace.jsonl"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.KVTiers) != 1 || len(rep.KVTiers[0].Tiers) != 3 {
			t.Fatalf("kv_tiers %+v", rep.KVTiers)
		}
		var hits int64
		for _, ts := range rep.KVTiers[0].Tiers {
			if ts.OffloadedBlocks == 0 {
				t.Fatalf("tier %s took no blocks: %+v", ts.Tier, ts)
			}
			hits += ts.HitBlocks
		}
		if hits == 0 {
			t.Fatalf("no lower-tier hits: %+v", rep.KVTiers[0].Tiers)
		}
		if out[i], err = json.Marshal(rep); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Fatal("two runs of one tier config differ")
	}
}
