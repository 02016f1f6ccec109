package sim

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/replay"
)

// TestItem34_1StepAheadIdentical: the replay that steps quiet passes
// ahead of the clock (replay/ahead.go) writes the same report and
// per-request records, byte for byte, as the one that settles the cluster
// at every pass end, on every golden engine path and on the router,
// timing, disaggregated, tiers and planner paths.
func TestItem34_1StepAheadIdentical(t *testing.T) {
	trace := testTrace(t)
	cases := map[string]string{}
	for _, g := range goldenPaths {
		cases[g.name] = fmt.Sprintf(goldenBase, g.backend, g.semantics, g.spec, g.dp, g.block, g.g1, g.blocks)
	}
	plain := fmt.Sprintf(goldenBase, "vllm", "real", "{kind: none}", 1, 64, "native", 2048)
	cases["kv_router"] = plain + "router: {policy: kv_router}\n"
	cases["kv_router_approx"] = plain + "router: {policy: kv_router, kv: {use_kv_events: false}}\n"
	cases["roofline"] = "traffic: {source: {type: trace, format: mooncake, block_size: 512}, load: {type: trace_timestamps, speedup: 4}}\nengine: {workers: {aggregated: {parallelism: {replicas: 4}}}}\n"
	cases["async"] = strings.Replace(plain, "max_sequences: 64", "max_sequences: 64, async_scheduling: true", 1)
	cases["disagg"] = "traffic: {source: {type: trace, format: mooncake, block_size: 512}, load: {type: trace_timestamps, speedup: 4}}\nengine: {mode: disaggregated, workers: {prefill: {parallelism: {replicas: 2}}, decode: {parallelism: {replicas: 2}}}}\n"
	cases["tiers"] = "traffic: {source: {type: trace, format: mooncake, block_size: 512}, load: {type: trace_timestamps, speedup: 4}}\nengine: {workers: {aggregated: {parallelism: {replicas: 2}, kv_cache: {g1_backend: kvbm, block_size: 64, capacity: {blocks: 800}, tiers: {g2: {blocks: 800}, g3: {blocks: 10000}}}}}}\n"
	cases["planner"] = plain + "planner: {policy: enabled, scaling_policy: hybrid_180_5, min_workers: 4, max_num_gpus: 4}\n"
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			checkStepAhead(t, cfg, trace)
		})
	}
}

// checkStepAhead fails t unless cfg's replay of trace that steps quiet
// passes ahead gives the report and per-request records, byte for byte, of
// the one that settles the cluster at every pass end.
func checkStepAhead(t *testing.T, cfg string, trace []byte) {
	t.Helper()
	run := func(passByPass bool) ([]byte, []byte) {
		replay.PassByPass = passByPass
		defer func() { replay.PassByPass = false }()
		rep, err := Predict(Inputs{Config: []byte(cfg), Trace: trace, TraceName: "conversation_400.jsonl", CapturePerRequest: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		js, err := rep.JSON()
		if err != nil {
			t.Fatal(err)
		}
		return js, rep.RequestsJSONL()
	}
	js0, rq0 := run(true)
	js1, rq1 := run(false)
	if !bytes.Equal(js0, js1) || !bytes.Equal(rq0, rq1) {
		t.Fatalf("stepping ahead changed the report (%d vs %d bytes) or the records", len(js0), len(js1))
	}
}
