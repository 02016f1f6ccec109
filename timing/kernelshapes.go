package timing

import "math"

// KernelShapes are the kernel shapes a Roofline prices that measured
// kernel tables (timing/kernels, compiled by tools/aictables) can cover.
type KernelShapes struct {
	// GEMM lists the dense weight GEMMs as (n, k) per GPU, lm_head last
	// (always bf16). MLA's stand-in latent projection is left out: it is
	// not one real kernel shape.
	GEMM [][2]int
	// Heads, KVHeads and HeadDim are one GPU's attention layout; zero for
	// MLA models, whose attention no table covers.
	Heads, KVHeads, HeadDim int
	// MoE is the routed experts' layer layout (Hidden, Inter, TopK,
	// Experts, TP, EP); zero for a dense model.
	MoE [6]int
}

// KernelShapes lists this model's table-coverable shapes.
func (r *Roofline) KernelShapes() KernelShapes {
	var s KernelShapes
	for _, k := range r.kernels {
		if n, kk, ok := intShape(k); ok {
			s.GEMM = append(s.GEMM, [2]int{n, kk})
		}
	}
	if n, kk, ok := intShape(r.lmHead); ok {
		s.GEMM = append(s.GEMM, [2]int{n, kk})
	}
	if m := &r.Model; m.IsMoE() {
		s.MoE = [6]int{m.Hidden, m.MoEIntermediate, m.ExpertsPerToken, m.Experts, r.Par.MoETensor, r.Par.MoEExpert}
	}
	if m := &r.Model; !m.IsMLA() {
		tp := r.Par.Tensor
		s.Heads = (m.Heads + tp - 1) / tp
		s.KVHeads = (m.KVHeads + tp - 1) / tp
		s.HeadDim = m.headDim()
	}
	return s
}

// intShape is k's (n, k) when both are whole numbers (a real kernel).
func intShape(k kernel) (int, int, bool) {
	if k.n != math.Trunc(k.n) || k.k != math.Trunc(k.k) || k.n < 1 || k.k < 1 {
		return 0, 0, false
	}
	return int(k.n), int(k.k), true
}
