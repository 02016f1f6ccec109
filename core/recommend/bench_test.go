package recommend

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/dynosim/dynosim-web/core/sim"
)

// BenchmarkRecommend100 runs a 100-trial search (random, over a space of
// 384) of the Mooncake conversation trace's first 2,000 requests on 1 and
// on 2 goroutines: the ledger is the same, the wall time should not be.
//
//	go test ./core/recommend -run XXX -bench Recommend100 -benchtime 1x
func BenchmarkRecommend100(b *testing.B) {
	trace, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "traces", "mooncake", "conversation_trace.jsonl"))
	if err != nil {
		b.Skipf("public trace not available: %v", err)
	}
	const text = `
traffic: {stop: {requests: 2000}}
engine:
  workers:
    aggregated:
      parallelism: {replicas: {choices: [2, 4, 6, 8]}}
      scheduler: {max_batched_tokens: {choices: [2048, 4096, 8192, 16384]}, max_sequences: {choices: [32, 64, 128, 256]}}
      kv_cache: {block_size: {choices: [32, 64, 128]}, capacity: {blocks: 40000}}
      timing: {type: polynomial}
router: {policy: {choices: [round_robin, kv_router]}}
evaluation: {sla: {ttft_ms: 2000, itl_ms: 50}}
optimization: {target: goodput_per_gpu}
optimizer: {algorithm: random, max_trials: 100}
`
	for _, par := range []int{1, 2} {
		b.Run(fmt.Sprintf("parallel=%d", par), func(b *testing.B) {
			for range b.N {
				sp, err := Parse("r.yaml", []byte(text), nil)
				if err != nil {
					b.Fatal(err)
				}
				p, err := sim.PrepareSweep(sim.Inputs{Config: sp.Base, Trace: trace, TraceName: "conversation_trace.jsonl"})
				if err != nil {
					b.Fatal(err)
				}
				l, err := Search(sp, p, Local{p}, par, nil)
				if err != nil || len(l.Candidates) != 100 {
					b.Fatal(err, len(l.Candidates))
				}
			}
		})
	}
}
