package sim

import (
	"bytes"
	"math"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

const kvBase = `
traffic:
  source: {type: trace, format: mooncake, block_size: 512}
  load: {type: trace_timestamps}
  stop: {requests: 2000}
engine:
  workers:
    aggregated:
      parallelism: {replicas: 8}
      kv_cache: {block_size: 512, capacity: {blocks: 2048}}
      timing: {type: polynomial}
`

// On the first 2,000 requests of the public conversation trace the KV router reuses more of the prompts
// than round robin and answers sooner; with temperature > 0 the same seed
// gives the same bytes; the approximate mode (no KV events) also routes by
// prefix.
func TestKVRouterBeatsRoundRobin(t *testing.T) {
	trace := sharedTrace(t, "mooncake/conversation_trace.jsonl")
	p, err := Prepare(Inputs{Config: []byte(kvBase), Trace: trace, TraceName: "conversation_trace.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(sets ...string) (map[string]float64, []byte) {
		t.Helper()
		rep, err := p.Run(sets, nil)
		if err != nil {
			t.Fatal(err)
		}
		js, err := rep.JSON()
		if err != nil {
			t.Fatal(err)
		}
		return rep.Summary, js
	}
	rr, _ := run("router.policy=round_robin")
	kv, _ := run("router.policy=kv_router")
	approx, _ := run("router.policy=kv_router", "router.kv.use_kv_events=false")
	const reuse = schema.FirstAdmissionReusedRatio
	t.Logf("reuse rr %.3f kv %.3f approx %.3f; mean TTFT rr %.1f kv %.1f approx %.1f",
		rr[reuse], kv[reuse], approx[reuse], rr[schema.TTFT.Key(schema.Mean)], kv[schema.TTFT.Key(schema.Mean)], approx[schema.TTFT.Key(schema.Mean)])
	if !(kv[reuse] > rr[reuse] && approx[reuse] > rr[reuse]) {
		t.Errorf("first-admission reuse: kv_router %v, approximate %v, round robin %v", kv[reuse], approx[reuse], rr[reuse])
	}
	// The router's estimate sits beside the reuse obtained; routers
	// that estimate nothing report null.
	if est := kv[schema.RouterEstimatedOverlapRatio]; !(est > 0) || !math.IsNaN(rr[schema.RouterEstimatedOverlapRatio]) {
		t.Errorf("estimated overlap: kv_router %v, round robin %v (want > 0 and null)", est, rr[schema.RouterEstimatedOverlapRatio])
	}
	if !(kv[schema.TTFT.Key(schema.Mean)] < rr[schema.TTFT.Key(schema.Mean)]) {
		t.Errorf("mean TTFT: kv_router %v, round robin %v", kv[schema.TTFT.Key(schema.Mean)], rr[schema.TTFT.Key(schema.Mean)])
	}
	_, a := run("router.policy=kv_router", "router.temperature=0.5", "execution.seed=7")
	_, b := run("router.policy=kv_router", "router.temperature=0.5", "execution.seed=7")
	_, c := run("router.policy=kv_router", "router.temperature=0.5", "execution.seed=8")
	if !bytes.Equal(a, b) || bytes.Equal(a, c) {
		t.Error("temperature 0.5: the same seed must give the same report, another seed another")
	}
}
