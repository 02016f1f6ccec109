package timing

import (
	"math"
	"testing"
)

// TestItem33_6SGLangTokenPool checks SGLang's memory accounting against the
// simulator's for the SGLang TP1 rows of AIConfigurator's measured serving
// points (../shared/calibration/aiconfigurator/silicon_sample.csv:
// Qwen3-32B bf16 on H100 SXM, SGLang 0.5.8.post1; Llama-3.1-8B fp8 on H200
// SXM, SGLang 0.5.6.post2). SGLang sizes its token pool
// (model_runner.py profile_max_num_token) as the memory left after the
// weights less total × (1 − mem_fraction_static), over cell_size =
// kv_heads × head_dim × layers × 2 × KV element bytes; the simulator as
// total × memory_fraction − weights − DefaultRuntimeReserveBytes, over its
// KV bytes per token. Checked: the cell size and the weights, and the pool
// at the same fraction (they differ only by the non-torch memory SGLang
// finds used after loading the weights, taken here as 1 GiB, against the
// simulator's 2 GiB reserve). And the simulator's SGLang default
// (sizePool under engine.semantics real: SGLangMemFractionStatic and the
// SGLangNonTorchBytes reserve) against SGLang's pool, within 3 %; the old
// default (memory_fraction 0.9, 2 GiB reserve) was +92 % on Qwen3-32B.
func TestItem33_6SGLangTokenPool(t *testing.T) {
	const nonTorch = SGLangNonTorchBytes // CUDA context and NCCL after weight loading (assumed)
	for _, tc := range []struct {
		name, model, gpu, dtype string
		chunk                   int     // SGLang's chunked_prefill_size for the GPU's memory bucket
		mfs                     float64 // SGLang's default mem_fraction_static
		cell                    int64   // SGLang's cell_size, bytes per token
		weightsGB               float64 // the checkpoint's weights, 10^9 bytes
		weightsTol              float64 // relative
	}{
		// 64 layers × 8 KV heads × 128 × 2 × 2 bytes; 32.8e9 parameters in bf16.
		{"qwen3-32b/h100_sxm/bf16", "qwen3-32b", "h100_sxm", "", 8192, 0.835, 262144, 65.5, 0.03},
		// 32 × 8 × 128 × 2 × 2 (the KV cache stays bf16); fp8 linears
		// (6.98e9 parameters) with the embeddings and LM head kept in bf16
		// (2 × 128,256 × 4,096 parameters), as in the FP8 checkpoints and
		// SGLang's online fp8: about 9.1 GB. The simulator stores every
		// weight in fp8 (8.03 GB): 1.05 GB short, 1 % of this pool.
		{"llama-3.1-8b/h200_sxm/fp8", "llama-3.1-8b", "h200_sxm", "fp8", 8192, 0.907, 131072, 9.1, 0.15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRoofline(RooflineSpec{Model: tc.model, Hardware: tc.gpu, DType: tc.dtype})
			if err != nil {
				t.Fatal(err)
			}
			total := r.GPU.MemoryBytes
			if got := SGLangMemFractionStatic(total, 1, 1, tc.chunk, false); got != tc.mfs {
				t.Fatalf("mem_fraction_static %v, want %v", got, tc.mfs)
			}
			if got := r.KVBytesPerToken(); got != tc.cell {
				t.Fatalf("KV bytes per token %d, SGLang's cell_size %d", got, tc.cell)
			}
			m := r.Model
			m.WeightBytes = r.weightBytes // as Roofline.EstimateBlocks
			w := WeightBytesPerGPU(m, r.Par)
			if math.Abs(w/1e9-tc.weightsGB)/tc.weightsGB > tc.weightsTol {
				t.Fatalf("weights %.2f GB, the checkpoint's %.2f GB", w/1e9, tc.weightsGB)
			}
			pool := func(mfs, weights float64) int { // SGLang's accounting
				return int((total - weights - nonTorch - total*(1-mfs)) / float64(tc.cell))
			}
			sim, err := r.EstimateBlocks(tc.mfs, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			// Same fraction: only the reserves differ, by 1 GiB of tokens.
			if want := pool(tc.mfs, w) - (DefaultRuntimeReserveBytes-nonTorch)/int(tc.cell); abs(sim-want) > 1 {
				t.Fatalf("pool at fraction %v: %d tokens, SGLang's accounting %d", tc.mfs, sim, want)
			}
			def, err := r.EstimateBlocksReserve(SGLangMemFractionStatic(total, 1, 1, tc.chunk, false), 1, SGLangNonTorchBytes)
			if err != nil {
				t.Fatal(err)
			}
			old, err := r.EstimateBlocks(0.9, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			sg := pool(tc.mfs, tc.weightsGB*1e9)
			if gap := float64(def)/float64(sg) - 1; math.Abs(gap) > 0.03 {
				t.Fatalf("simulator's SGLang default %d tokens, SGLang's %d (%+.1f%%)", def, sg, 100*gap)
			}
			t.Logf("SGLang default (mem_fraction_static %v): %d tokens; simulator's SGLang default %d (%+.1f%%); memory_fraction 0.9 with the 2 GiB reserve: %d (%+.0f%%)",
				tc.mfs, sg, def, 100*(float64(def)/float64(sg)-1), old, 100*(float64(old)/float64(sg)-1))
		})
	}
}

func abs(x int) int { return max(x, -x) }
