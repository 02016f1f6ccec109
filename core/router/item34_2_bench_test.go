package router_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/core/sim"
)

// The issue 34 item 2 benchmark: the whole Mooncake conversation trace at
// 5× load (trace timestamps / 5) on 8 vLLM workers with 64-token blocks and
// the default timing, behind round robin and behind the KV router. The
// item asks the KV router's CPU to be at most 1.2× round robin's; profile
// with `go test -run '^$' -bench Item34_2Trace -cpuprofile ...`.
const item34_2Config = `
traffic:
  source: {type: trace, format: mooncake, block_size: 512}
  load: {type: trace_timestamps, speedup: 5.0}
engine:
  workers:
    aggregated:
      parallelism: {replicas: 8}
      kv_cache: {block_size: 64}
`

func benchItem34_2Trace(b *testing.B, policy string) {
	trace, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "traces", "mooncake", "conversation_trace.jsonl"))
	if err != nil {
		b.Skipf("public trace not available: %v", err)
	}
	cfg := []byte(item34_2Config + "router: {policy: " + policy + "}\n")
	b.ReportAllocs()
	var out float64
	for b.Loop() {
		rep, err := sim.Predict(sim.Inputs{Config: cfg, Trace: trace, TraceName: "conversation_trace.jsonl"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		out = rep.Summary[schema.TotalOutputTokens]
	}
	b.ReportMetric(out*float64(b.N)/b.Elapsed().Seconds(), "sim_tok/s")
}

func BenchmarkItem34_2TraceRoundRobin(b *testing.B) { benchItem34_2Trace(b, "round_robin") }
func BenchmarkItem34_2TraceKVRouter(b *testing.B)   { benchItem34_2Trace(b, "kv_router") }
