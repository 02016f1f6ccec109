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
	table  *kernels.Table
	gemm   []*kernels.GEMM // parallel to Roofline.kernels
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
	kt := &kernelTables{table: t, gemm: make([]*kernels.GEMM, len(r.kernels))}
	dtype := dtypeName(r.weightBytes)
	for i, k := range r.kernels {
		if n, kk, ok := intShape(k); ok && dtype != "" {
			kt.gemm[i] = t.FindGEMM(dtype, n, kk)
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
