package kernels_test

import (
	"math"
	"testing"

	"github.com/dynosim/dynosim-web/timing/kernels"
)

// TestItem33_3FP8Quant pins the FP8 quantisation costs and the vLLM FP8
// MoE lane against AIC's source rows (aiconfigurator @ 095f58a5).
func TestItem33_3FP8Quant(t *testing.T) {
	tables := loadAll(t)
	b200 := tables["b200,trtllm"]
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		// systems/data/b200_sxm/quantize/trtllm/1.3.0rc20/computescale_perf.parquet, m 32, k 8192.
		{"compute_scale measured", b200.FindQuant(kernels.ComputeScale, 8192).Ms(32), 0.009159466127554576},
		// scale_matrix_perf.parquet, m 32, k 8192.
		{"scale_matrix measured", b200.FindQuant(kernels.ScaleMatrix, 8192).Ms(32), 0.002125866711139679},
		// moe/vllm/0.24.0: Scout's layer (5120, 8192, top 1 of 16, moe TP 2) at 16 tokens is
		// vLLM's fp8_block Triton row, not the ModelOpt FlashInfer per-tensor row (0.9111 ms),
		// both under Llama 4's power_law_1.01 (TestItem33_3MoEDistribution).
		{"vllm fp8 moe is fp8_block", tables["h100_sxm,vllm"].FindMoE("fp8", 5120, 8192, 1, 16, 2, 1).Ms(16), 0.2626431941986084},
		// moe/trtllm/1.3.0rc20 keeps the per-tensor row (moe_torch_flow_cutlass, power_law_1.01).
		{"trtllm fp8 moe is per-tensor", tables["h100_sxm,trtllm"].FindMoE("fp8", 5120, 8192, 1, 16, 2, 1).Ms(16), 0.9996288299560547},
	} {
		if math.Abs(tc.got/tc.want-1) > 1e-12 {
			t.Errorf("%s: got %g, want %g", tc.name, tc.got, tc.want)
		}
	}

	// Static-scale FP8: the row less compute_scale (and scale_matrix for a
	// low-precision input), never below the speed of light.
	g := b200.FindGEMM("fp8", 8192, 2048)
	cs, sm := b200.FindQuant(kernels.ComputeScale, 2048), b200.FindQuant(kernels.ScaleMatrix, 2048)
	if g == nil || cs == nil || sm == nil {
		t.Fatal("b200 trtllm: no fp8 8192x2048 GEMM or its quantisation costs")
	}
	for _, m := range []float64{1, 32, 700, 16384} {
		want := max(g.Ms(m, b200.Peak)-cs.Ms(m)-sm.Ms(m), g.SOL(m, b200.Peak))
		if got := g.StaticMs(m, b200.Peak, cs, sm); got != want {
			t.Errorf("m %g: StaticMs %g, want %g", m, got, want)
		}
		if got := g.StaticMs(m, b200.Peak, nil, nil); got != g.Ms(m, b200.Peak) {
			t.Errorf("m %g: without costs %g, want the row %g", m, got, g.Ms(m, b200.Peak))
		}
	}
	bf := b200.FindGEMM("bf16", 8192, 2048)
	if got := bf.StaticMs(32, b200.Peak, cs, sm); got != bf.Ms(32, b200.Peak) {
		t.Errorf("bf16 GEMM changed by the fp8 costs: %g", got)
	}

	// Beyond the collected m: compute_scale held, scale_matrix ∝ m.
	q := kernels.Quant{Op: kernels.ComputeScale, Curve: kernels.Series{X: []float64{1, 10}, Ms: []float64{0.002, 0.004}}}
	s := kernels.Quant{Op: kernels.ScaleMatrix, Curve: q.Curve}
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"between", q.Ms(5.5), 0.003},
		{"compute_scale held", q.Ms(40), 0.004},
		{"scale_matrix ∝ m", s.Ms(40), 0.016},
	} {
		if math.Abs(tc.got-tc.want) > 1e-15 {
			t.Errorf("%s: got %g, want %g", tc.name, tc.got, tc.want)
		}
	}
}

// TestItem33_3AttentionHold checks the truncated corner of a real grid
// (H200 vLLM, Llama-3.1-70B at TP2: batch 256 was measured to KV length
// 1024 only) against the plainly written hold, tapered weights included.
func TestItem33_3AttentionHold(t *testing.T) {
	tb := loadAll(t)["h200_sxm,vllm"]
	g := tb.FindGeneration(32, 4, 128, "fp8")
	if g == nil {
		t.Fatal("no 32/4/128 fp8 generation grid")
	}
	sol := func(b, s float64) float64 { return kernels.GenSOL(g, b, s) }
	for _, q := range [][2]float64{{256, 5000}, {200, 3000}, {4096, 300}, {1, 200000}} {
		got, want := kernels.GenAt(g, q[0], q[1]), shepard(g.Rows, q[0], q[1], sol)
		if q == [2]float64{200, 3000} { // batch 128 covers 3000, 256 does not: one-sided
			v128 := kernels.GenAt(g, 128, 3000)
			want = v128 * sol(200, 3000) / sol(128, 3000)
		}
		if math.Abs(got/want-1) > 1e-12 {
			t.Errorf("batch %g, length %g: %g ms, want %g", q[0], q[1], got, want)
		}
	}
}
