package timing

import (
	"fmt"
	"strings"

	"github.com/dynosim/dynosim-web/timing/kernels"
)

// kernelTables binds a measured kernel table (timing/kernels) to one
// Roofline: per dense GEMM of r.kernels its curve or nil (priced on the
// fitted curves), lm_head's, and the attention grids of the model's head
// layout. Whatever has no table keeps today's curves; Source says which.
type kernelTables struct {
	table *kernels.Table
	gemm  []*kernels.GEMM // parallel to Roofline.kernels
	// cs and sm, parallel to gemm: the FP8 quantisation costs AIC
	// subtracts from an fp8 GEMM row for a static-scale checkpoint
	// (timing/kernels/quant.go); nil where not subtracted.
	cs, sm []*kernels.Quant
	lmHead *kernels.GEMM
	ctx    *kernels.Context
	gen    *kernels.Gen
	moe    *kernels.MoE // the routed experts of a MoE layer
}

// KernelTableGPU is the GPU whose kernel table prices gpu: the RTX PRO
// 6000 Workstation runs at the Server Edition's measured speed, as its
// curves do (curves.go).
func KernelTableGPU(gpu string) string {
	if g := normName(gpu); g != "rtx_pro_6000" {
		return g
	}
	return "rtx_pro_6000_server"
}

// UseKernelTable prices this model's kernels from t where t has them
// (package doc of timing/kernels), the fitted curves elsewhere. t must be
// the table of the model's GPU (KernelTableGPU) and engine.
func (r *Roofline) UseKernelTable(t *kernels.Table) error {
	if t.GPU != KernelTableGPU(r.GPU.Name) || t.Engine != r.engine {
		return fmt.Errorf("kernel table %s-%s does not match %s under %s", t.GPU, t.Engine, r.GPU.Name, r.engine)
	}
	kt := &kernelTables{table: t, gemm: make([]*kernels.GEMM, len(r.kernels)),
		cs: make([]*kernels.Quant, len(r.kernels)), sm: make([]*kernels.Quant, len(r.kernels))}
	dtype := dtypeName(r.weightBytes)
	for i, k := range r.kernels {
		n, kk, ok := intShape(k)
		if !ok || dtype == "" {
			continue
		}
		kt.gemm[i] = t.FindGEMM(dtype, n, kk)
		if kt.gemm[i] == nil || dtype != "fp8" {
			continue
		}
		// dtype fp8 is a static-scale FP8 checkpoint (ModelOpt/NVIDIA
		// per-tensor FP8, what the FP8 engines serve): AIC's fp8_static.
		// The row-parallel GEMMs writing the hidden state (o_proj, the
		// MLPs' down projections; not the router, n = experts) take an
		// input the kernel before them already quantised: AIC's
		// low_precision_input GEMMs (sdk/models/llama.py @ 095f58a5).
		kt.cs[i] = t.FindQuant(kernels.ComputeScale, kk)
		if n == r.Model.Hidden && kt.cs[i] != nil {
			kt.sm[i] = t.FindQuant(kernels.ScaleMatrix, kk)
		}
	}
	if n, kk, ok := intShape(r.lmHead); ok {
		kt.lmHead = t.FindGEMM("bf16", n, kk)
	}
	if s := r.KernelShapes(); s.Heads > 0 {
		if kvd := dtypeName(float64(r.Model.KVBytes)); kvd != "" {
			kt.ctx = t.FindContext(s.Heads, s.KVHeads, s.HeadDim, kvd)
			kt.gen = t.FindGeneration(s.Heads, s.KVHeads, s.HeadDim, kvd)
		}
	}
	if s := r.KernelShapes(); s.MoE[0] > 0 && dtype != "" {
		e := s.MoE
		kt.moe = t.FindMoE(dtype, e[0], e[1], e[2], e[3], e[4], e[5])
	}
	r.kt = kt
	for i := range r.memo {
		r.memo[i] = gemmMemo{}
	}
	return nil
}

// dtypeName is the kernel tables' name of an element size.
func dtypeName(bytes float64) string {
	switch bytes {
	case 2:
		return "bf16"
	case 1:
		return "fp8"
	}
	return ""
}

// KernelSource names what priced this model's kernels: "curves" without
// a table, else the table ("aic vllm 0.24.0 h100_sxm") with the parts
// that fell back to the fitted curves, e.g. "aic vllm 0.24.0 h100_sxm
// (curves: moe experts, all-reduce)".
func (r *Roofline) KernelSource() string {
	kt := r.kt
	if kt == nil {
		return "curves"
	}
	var fb []string
	covered := 0
	for _, g := range kt.gemm {
		if g != nil {
			covered++
		}
	}
	if kt.lmHead != nil {
		covered++
	}
	if all := len(kt.gemm) + 1; covered < all {
		fb = append(fb, fmt.Sprintf("gemm %d of %d", all-covered, all))
	}
	if kt.ctx == nil {
		fb = append(fb, "context attention")
	}
	if kt.gen == nil {
		fb = append(fb, "generation attention")
	}
	if r.Model.IsMoE() && kt.moe == nil {
		fb = append(fb, "moe experts")
	}
	if r.Par.Tensor > 1 || r.Par.AttentionData > 1 || r.Par.MoEExpert > 1 {
		fb = append(fb, "collectives")
	}
	s := kt.table.Label()
	if len(fb) > 0 {
		s += " (curves: " + strings.Join(fb, ", ") + ")"
	}
	return s
}

// tableKernelMs is dense kernel i's latency over tokens from its table
// curve, less the FP8 quantisation AIC's fp8 rows include and a
// static-scale checkpoint does not run (kernels.GEMM.StaticMs).
func (r *Roofline) tableKernelMs(i int, tokens float64) float64 {
	kt := r.kt
	return kt.gemm[i].StaticMs(tokens, kt.table.Peak, kt.cs[i], kt.sm[i])
}

// tableGEMMMs is a GEMM curve's latency over tokens.
func (r *Roofline) tableGEMMMs(g *kernels.GEMM, tokens float64) float64 {
	return g.Ms(tokens, r.kt.table.Peak)
}

// tableAttentionMs is one pass's attention from the tables (all layers),
// or ok false where no grid covers the model. A cached prefix scales the
// full sequence's latency by the share of its (query, key) pairs computed
// (AIC's (seq² − prefix²)/seq², counted with the diagonal).
func (r *Roofline) tableAttentionMs(kvTokens, pairs, batch, seq float64, decode bool) (float64, bool) {
	kt := r.kt
	layers := float64(r.Model.Layers)
	switch {
	case kt == nil || batch <= 0:
		return 0, false
	case decode && kt.gen != nil:
		return layers * kt.gen.Ms(batch, kvTokens/batch), true
	case !decode && kt.ctx != nil && seq > 0:
		full := batch * seq * (seq + 1) / 2
		return layers * kt.ctx.Ms(batch, seq) * min(pairs/full, 1), true
	}
	return 0, false
}
