package timing

// Speculative decoding's cost (issue 30 item 4). A speculative decode step
// is two kinds of work, as in vLLM V1 (vllm/v1/spec_decode/eagle.py,
// vllm/v1/worker/gpu_model_runner.py):
//
//   - the proposer drafts k tokens one after another: an EAGLE head (one
//     decoder layer, EAGLE-1 and EAGLE-3 alike) or DeepSeek's MTP module
//     (num_nextn_predict_layers, 1 in DeepSeek-V3; vLLM's deepseek_mtp.py
//     reuses it for every draft) runs once per draft token and samples
//     through the target's lm_head; the n-gram proposer (prompt lookup) runs
//     on the CPU and costs the GPU nothing;
//   - the target verifies the k drafts and samples one more token: one
//     forward over k+1 query tokens per sequence (rejection sampling over
//     all k+1 positions).
//
// Every timing model prices both through its own decode step, so a
// roofline-free model (polynomial, fixed, profile) is charged the same way:
// it only sees token counts, and the verify step raises the pass's decode
// token count to batch×(k+1) (and its KV tokens by the k draft positions).

// Verify prices the target's verification of drafts tokens for each of
// batch sequences holding activeKV context tokens in total: one decode
// step over batch×(drafts+1) query tokens, floored and scaled like Decode.
func (s Scale) Verify(m Model, batch, drafts, activeKV, totalKV int) Time {
	if batch == 0 {
		return 0
	}
	kv := activeKV + batch*drafts
	return s.Decode(m, batch*(drafts+1), kv, kv/batch, totalKV)
}

// Draft prices the proposer's drafts autoregressive steps for batch
// sequences: each a ratio (DraftRatio) of the target's decode step over
// the same batch and context. No floor: the reference's 1 ms floor is for
// token-emitting steps.
func (s Scale) Draft(m Model, batch, drafts int, ratio float64, activeKV, totalKV int) Time {
	if batch == 0 || drafts == 0 || !(ratio > 0) {
		return 0
	}
	ms := float64(drafts) * ratio * max(m.DecodeMs(batch, activeKV, activeKV/batch, totalKV), 0)
	return quantize(ms, s.Speedup*s.DecodeSpeedup)
}

// DraftRatio is the cost of one draft step of a head of headLayers decoder
// layers over the cost of one decode step of target m: the weights each
// reads, since small-batch decode is bound by them. A draft step reads its
// layers and the target's lm_head (EAGLE and MTP heads share it; a
// vocabulary-sized GEMM that outweighs one layer on an 8B model); a target
// step reads every layer and lm_head (the input embedding is a row lookup).
// MoE layers count their active experts. The head's attention and per-pass
// launch costs are left out: with CUDA graphs the head's few kernels are
// cheap next to its weight reads.
func DraftRatio(m ModelSpec, headLayers int) float64 {
	_, active := m.Params()
	lmHead := float64(m.Vocab) * float64(m.Hidden)
	body := active - lmHead
	if !m.TiedEmbed {
		body -= lmHead // the input embedding, counted apart from lm_head
	}
	if m.Layers <= 0 || !(body > 0) {
		return 0
	}
	draft := float64(headLayers)/float64(m.Layers)*body + lmHead
	return draft / (body + lmHead)
}
