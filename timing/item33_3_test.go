package timing

import (
	"math"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/timing/kernels"
	"github.com/dynosim/dynosim-web/timing/kernels/kerneldata"
)

func kernelTable(t *testing.T, gpu, engine string) *kernels.Table {
	t.Helper()
	b, ok, err := kerneldata.Table(KernelTableGPU(gpu), engine)
	if err != nil || !ok {
		t.Fatalf("%s %s: table ok=%v err=%v", gpu, engine, ok, err)
	}
	tb, err := kernels.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestItem33_3FallbackOnlyWhereUncovered binds each case's table and checks
// that (1) every GEMM and attention the table has a shape for is priced
// from the table, (2) the curves price exactly the rest, and (3) the
// label names each part that fell back.
func TestItem33_3FallbackOnlyWhereUncovered(t *testing.T) {
	for _, tc := range []struct {
		model, gpu, engine, dtype string
		tp                        int
		label                     string // KernelSource
	}{
		{"llama-3.1-8b", "h100_sxm", "vllm", "", 1, "aic vllm 0.24.0 h100_sxm"},
		{"llama-3.1-8b", "h100_sxm", "sglang", "fp8", 1, "aic sglang 0.5.14 h100_sxm"},
		{"llama-3.1-70b", "h200_sxm", "trtllm", "", 4, "(curves: collectives)"},
		{"qwen3-30b-a3b", "b200", "vllm", "", 1, "aic vllm 0.24.0 b200_sxm"},
		{"qwen3-30b-a3b", "l40s", "vllm", "fp8", 2, "aic vllm 0.24.0 l40s (curves: collectives)"},
		{"deepseek-v3", "h200_sxm", "vllm", "", 8, "(curves: gemm 1 of 7, context attention, generation attention, collectives)"},
		{"llama-3.1-8b", "b200", "vllm", "fp4", 1, "(curves: gemm 4 of 5)"},
		{"llama-3.1-8b", "rtx_pro_6000", "vllm", "", 1, "aic vllm 0.24.0 rtx_pro_6000_server"},
		{"llama-2-7b", "a100_80gb", "vllm", "", 2, "aic vllm 0.14.0 a100_sxm (curves: generation attention, collectives)"},
	} {
		name := tc.model + "/" + tc.gpu + "/" + tc.engine + "/" + tc.dtype
		spec := RooflineSpec{Model: tc.model, Hardware: tc.gpu, Engine: tc.engine, DType: tc.dtype, Parallelism: Parallelism{Tensor: tc.tp}}
		curves, err := NewRoofline(spec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, _ := NewRoofline(spec)
		tb := kernelTable(t, tc.gpu, tc.engine)
		if err := r.UseKernelTable(tb); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := r.KernelSource(); !strings.Contains(got, tc.label) || (!strings.Contains(tc.label, "(") && strings.Contains(got, "(")) {
			t.Errorf("%s: label %q, want %q", name, got, tc.label)
		}
		// (1) and (2), GEMM by GEMM: bound iff the table has the shape.
		dtype := dtypeName(r.weightBytes)
		for i, k := range r.kernels {
			n, kk, whole := intShape(k)
			has := whole && dtype != "" && tb.FindGEMM(dtype, n, kk) != nil
			if has != (r.kt.gemm[i] != nil) {
				t.Errorf("%s: gemm %vx%v: in table %v, bound %v", name, k.n, k.k, has, r.kt.gemm[i] != nil)
			}
			// The FP8 quantisation costs: every fp8 GEMM subtracts the scale
			// computation, those writing the hidden state the quantise too.
			wantCS := has && dtype == "fp8" && tb.FindQuant(kernels.ComputeScale, kk) != nil
			wantSM := wantCS && n == r.Model.Hidden
			if (r.kt.cs[i] != nil) != wantCS || (r.kt.sm[i] != nil) != wantSM {
				t.Errorf("%s: gemm %vx%v: compute_scale %v (want %v), scale_matrix %v (want %v)", name, k.n, k.k,
					r.kt.cs[i] != nil, wantCS, r.kt.sm[i] != nil, wantSM)
			}
		}
		for _, tokens := range []float64{1, 7, 64, 300, 4096, 20000} {
			var want float64
			for i, k := range r.kernels {
				if g := r.kt.gemm[i]; g != nil { // fp8: AIC's static-scale composition (kernels.GEMM.StaticMs)
					want += k.count * g.StaticMs(tokens, tb.Peak, r.kt.cs[i], r.kt.sm[i])
				} else {
					want += k.count * r.curves.GEMMMs(tokens, k.n, k.k, r.weightBytes, r.GPU)
				}
			}
			if r.kt.lmHead != nil {
				want += r.kt.lmHead.Ms(1, tb.Peak)
			} else {
				want += r.curves.GEMMMs(1, r.lmHead.n, r.lmHead.k, 2, r.GPU)
			}
			if m := &r.Model; m.IsMoE() && r.kt.moe != nil { // the routed experts: measured per layer
				want += float64(m.moeLayers()) * r.kt.moe.Ms(tokens)
			} else if m.IsMoE() { // else on the curves
				want += curves.gemmMs(tokens, 1) - curves.denseGEMMMs(tokens, 1)
			}
			if got := r.gemmMs(tokens, 1); math.Abs(got-want) > 1e-9*want {
				t.Errorf("%s: gemm(%g) = %g, want %g", name, tokens, got, want)
			}
		}
		// Attention: the table where a grid covers the layout, else exactly
		// the curves.
		for _, decode := range []bool{false, true} {
			got := r.attention(4*2000, 4*2000*2001/2, 4, 2000, decode)
			cur := curves.attention(4*2000, 4*2000*2001/2, 4, 2000, decode)
			covered := r.kt.ctx != nil
			if decode {
				covered = r.kt.gen != nil
			}
			if covered == (got == cur) {
				t.Errorf("%s: attention decode=%v: covered %v, table %g, curves %g", name, decode, covered, got, cur)
			}
		}
	}
}

// denseGEMMMs is gemmMs without the routed experts (the curves' part of a
// MoE model every table leaves to the curves).
func (r *Roofline) denseGEMMMs(tokens, outTokens float64) float64 {
	var ms float64
	for _, k := range r.kernels {
		ms += k.count * r.curves.GEMMMs(tokens, k.n, k.k, r.weightBytes, r.GPU)
	}
	return ms + r.curves.GEMMMs(outTokens, r.lmHead.n, r.lmHead.k, 2, r.GPU)
}

// TestItem33_3Refusals: a table of another GPU or engine is refused, and
// without a table the roofline says "curves".
func TestItem33_3Refusals(t *testing.T) {
	r, err := NewRoofline(RooflineSpec{Model: "llama-3.1-8b", Hardware: "h100_sxm", Engine: "sglang"})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.KernelSource(); got != "curves" {
		t.Errorf("no table: %q", got)
	}
	for _, c := range [][2]string{{"h100_sxm", "vllm"}, {"h200_sxm", "sglang"}} {
		if err := r.UseKernelTable(kernelTable(t, c[0], c[1])); err == nil {
			t.Errorf("%v: accepted for h100_sxm sglang", c)
		}
	}
	if _, ok, _ := kerneldata.Table(KernelTableGPU("rtx_4090"), "vllm"); ok {
		t.Errorf("rtx_4090: a table exists, but AIC measured none")
	}
}

// TestItem33_3Deterministic: two bindings of the same table price every
// pass identically, and pricing does not depend on the memo's history.
func TestItem33_3Deterministic(t *testing.T) {
	mk := func() *Roofline {
		r, err := NewRoofline(RooflineSpec{Model: "qwen3-32b", Hardware: "h100_sxm", Engine: "vllm", Parallelism: Parallelism{Tensor: 2}})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.UseKernelTable(kernelTable(t, "h100_sxm", "vllm")); err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := mk(), mk()
	for i := 1; i < 3000; i += 37 {
		b.DecodeMs(i%300+1, i*50, 0, 0) // b's memo sees other shapes first
	}
	for i := 1; i < 3000; i += 13 {
		if x, y := a.DecodeMs(i%200+1, i*40, 0, 0), b.DecodeMs(i%200+1, i*40, 0, 0); x != y {
			t.Fatalf("decode %d: %v != %v", i, x, y)
		}
		if x, y := a.PrefillMs(1+i%4, 64+i, i/2), b.PrefillMs(1+i%4, 64+i, i/2); x != y {
			t.Fatalf("prefill %d: %v != %v", i, x, y)
		}
	}
}
