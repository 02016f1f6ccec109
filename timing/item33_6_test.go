package timing

import (
	"math"
	"testing"
)

// sglangMemFractionStatic is SGLang's default --mem-fraction-static
// (sgl-project/sglang python/sglang/srt/server_args.py,
// _handle_gpu_memory_settings, PR #10975): the MiB reserved outside the
// static pool (metadata 512, prefill activations 1.5 × max(chunk, 2048),
// CUDA graphs 2 × cuda_graph_max_bs, tp × pp / 8 GiB; at least 10 GiB above
// 60 GiB of memory) off the GPU's memory, rounded to 3 places.
func sglangMemFractionStatic(gpuMiB float64, tp, pp, chunk, cudaGraphMaxBS int) float64 {
	reserved := 512 + 1.5*float64(max(chunk, 2048)) + 2*float64(cudaGraphMaxBS) + float64(tp*pp)/8*1024
	if gpuMiB > 60*1024 {
		reserved = max(reserved, 10*1024)
	}
	return math.Round((gpuMiB-reserved)/gpuMiB*1000) / 1000
}

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
// simulator's 2 GiB reserve). Logged: the gap of the default configs, where
// memory_fraction 0.9 meets SGLang's smaller default fraction.
func TestItem33_6SGLangTokenPool(t *testing.T) {
	const nonTorch = 1 << 30 // CUDA context and NCCL after weight loading (assumed)
	for _, tc := range []struct {
		name, model, gpu, dtype string
		chunk, cudaGraphMaxBS   int     // SGLang's defaults for the GPU's memory bucket
		mfs                     float64 // SGLang's default mem_fraction_static
		cell                    int64   // SGLang's cell_size, bytes per token
		weightsGB               float64 // the checkpoint's weights, 10^9 bytes
		weightsTol              float64 // relative
	}{
		// 64 layers × 8 KV heads × 128 × 2 × 2 bytes; 32.8e9 parameters in bf16.
		{"qwen3-32b/h100_sxm/bf16", "qwen3-32b", "h100_sxm", "", 8192, 256, 0.835, 262144, 65.5, 0.03},
		// 32 × 8 × 128 × 2 × 2 (the KV cache stays bf16); fp8 linears
		// (6.98e9 parameters) with the embeddings and LM head kept in bf16
		// (2 × 128,256 × 4,096 parameters), as in the FP8 checkpoints and
		// SGLang's online fp8: about 9.1 GB. The simulator stores every
		// weight in fp8 (8.03 GB): 1.05 GB short, 1 % of this pool.
		{"llama-3.1-8b/h200_sxm/fp8", "llama-3.1-8b", "h200_sxm", "fp8", 8192, 256, 0.907, 131072, 9.1, 0.15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRoofline(RooflineSpec{Model: tc.model, Hardware: tc.gpu, DType: tc.dtype})
			if err != nil {
				t.Fatal(err)
			}
			total := r.GPU.MemoryBytes
			if got := sglangMemFractionStatic(total/(1<<20), 1, 1, tc.chunk, tc.cudaGraphMaxBS); got != tc.mfs {
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
			def, err := r.EstimateBlocks(0.9, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			sg := pool(tc.mfs, tc.weightsGB*1e9)
			t.Logf("SGLang default (mem_fraction_static %v): %d tokens; simulator at memory_fraction %v: %d; default config (0.9): %d (%+.0f%%)",
				tc.mfs, sg, tc.mfs, sim, def, 100*(float64(def)/float64(sg)-1))
		})
	}
}

func abs(x int) int { return max(x, -x) }
