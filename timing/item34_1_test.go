package timing

import "testing"

// TestItem34_1DecodeMemo: DecodeMs with its per-batch memo and in-place
// attention (decodememo.go) returns bit for bit what the general path
// gemm + attention + overheads returns, for dense, MoE and MLA models,
// tensor parallelism, eager batches above the CUDA-graph limit, batches
// that share a memo slot (b and b + decodeMemoSize), and after a kernel
// table is bound on a Roofline whose memo was already filled.
func TestItem34_1DecodeMemo(t *testing.T) {
	cases := []struct {
		name  string
		spec  RooflineSpec
		table bool
	}{
		{"llama-8b h100", RooflineSpec{Model: "llama-3.1-8b", Hardware: "h100_sxm"}, false},
		{"llama-8b h100 tp2 sglang", RooflineSpec{Model: "llama-3.1-8b", Hardware: "h100_sxm", Engine: "sglang", Parallelism: Parallelism{Tensor: 2}}, false},
		{"qwen3-30b-a3b moe", RooflineSpec{Model: "qwen3-30b-a3b", Hardware: "h100_sxm"}, false},
		{"deepseek-v3 mla", RooflineSpec{Model: "deepseek-v3", Hardware: "h200_sxm", DType: "fp8", Parallelism: Parallelism{Tensor: 8}}, false},
		{"llama-8b fp8 kv", RooflineSpec{Model: "llama-3.1-8b", Hardware: "h100_sxm", KVDType: "fp8"}, false},
		{"qwen3-32b tp2 aic table", RooflineSpec{Model: "qwen3-32b", Hardware: "h100_sxm", Engine: "vllm", Parallelism: Parallelism{Tensor: 2}}, true},
	}
	batches := []int{1, 2, 7, 64, 255, 512, 513, 1000, 1024, 1025, 2049, 3000}
	for _, c := range cases {
		r, err := NewRoofline(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		check := func(stage string) {
			t.Helper()
			for round := 0; round < 2; round++ { // the second round hits the memo
				for _, b := range batches {
					for _, kv := range []int{0, b, 37 * b, 4096*b + 13, 1 << 22} {
						bf, kf := float64(b), float64(kv)
						want := r.gemmMs(bf, bf) + r.attention(kf, kf, bf, kf/bf, true) + r.overheads(bf, bf, b <= cudaGraphMaxBatch)
						if got := r.DecodeMs(b, kv, kv, kv); got != want {
							t.Fatalf("%s %s: DecodeMs(%d, %d) = %v, want %v", c.name, stage, b, kv, got, want)
						}
					}
				}
			}
		}
		check("curves")
		if c.table {
			if err := r.UseKernelTable(kernelTable(t, "h100_sxm", "vllm")); err != nil {
				t.Fatal(err)
			}
			check("table")
		}
		if got := r.DecodeMs(0, 100, 0, 0); got != 0 {
			t.Errorf("%s: empty batch = %v", c.name, got)
		}
	}
}
