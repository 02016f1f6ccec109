package engine

import "math"

// BatchWait is TensorRT-LLM's context batch waiting (its PyTorch backend's
// LLM arguments batch_wait_timeout_iters and batch_wait_max_tokens_ratio,
// tensorrt_llm/llmapi/llm_args.py; the rule is PyExecutor._waiting_requests,
// called from PyExecutor._schedule in
// tensorrt_llm/_torch/pyexecutor/py_executor.py, since moved unchanged to
// the scheduler package's check_batch_waiting). When an iteration's
// scheduled batch holds both context (prefill) and generation requests,
// the context requests are held back — the iteration runs the generation
// requests alone — until either the scheduler has held them
// TimeoutIters times in a row, or the iteration's scheduled tokens
// (context tokens plus 1 + draft tokens per generation request) reach
// MaxTokensRatio × max_num_tokens; then they run and the count restarts
// from 0. An iteration without generation requests never waits (TRT-LLM:
// "no need to wait, to avoid dead waiting") and leaves the count alone.
//
// As in TRT-LLM, the two settings act together: with either at 0 the
// release condition holds at once (count ≥ 0, or tokens ≥ 0), so nothing
// ever waits. The zero value is off. TensorRT-LLM backend only. Each
// data-parallel rank keeps its own count, as separate TRT-LLM servers do;
// TRT-LLM skips the rule under enable_attention_dp (it balances context
// requests across attention-DP ranks instead), which is not modelled.
type BatchWait struct {
	TimeoutIters   int     // batch_wait_timeout_iters (0: off)
	MaxTokensRatio float64 // batch_wait_max_tokens_ratio, in [0, 1]
}

// On reports whether the rule can hold a context batch at all.
func (b BatchWait) On() bool { return b.TimeoutIters > 0 && b.MaxTokensRatio > 0 }

// validate checks the settings; the error names the YAML key.
func (c *Config) validateBatchWait() error {
	b := c.BatchWait
	switch {
	case b.TimeoutIters < 0:
		return fieldErr("batch_wait_timeout_iters", "must be ≥ 0 (0 = off), got %d", b.TimeoutIters)
	case math.IsNaN(b.MaxTokensRatio) || b.MaxTokensRatio < 0 || b.MaxTokensRatio > 1:
		return fieldErr("batch_wait_max_tokens_ratio", "must be in [0, 1] (0 = off; TensorRT-LLM's range), got %v", b.MaxTokensRatio)
	case b == BatchWait{}:
		return nil
	case c.Policy != TRTLLM:
		key := "batch_wait_timeout_iters"
		if b.TimeoutIters == 0 {
			key = "batch_wait_max_tokens_ratio"
		}
		return fieldErr(key, "TensorRT-LLM's batch waiting, backend trtllm only (not %s); leave it 0", c.Policy)
	case b.MaxTokensRatio > 0 && c.MaxBatchedTokens == 0:
		return fieldErr("batch_wait_max_tokens_ratio", "needs scheduler.max_batched_tokens > 0 (TensorRT-LLM's max_num_tokens, which the ratio scales); got 0 (unbounded)")
	}
	return nil
}

// holdContext decides, at the start of a pass, whether the pass runs its
// generation requests only (TensorRT-LLM batch waiting, BatchWait). The
// context requests are those the pass would otherwise compute prompt
// tokens for: running requests part-way through their prompt (a chunked
// or recomputed prefill) and the waiting requests that fit in the free
// sequence slots; their tokens are what the pass's token budget leaves
// them after the generation tokens. A waiting request's cached prefix is
// not subtracted (TensorRT-LLM's older releases counted every prompt
// token; the InferenceMAX runs turn block reuse off).
func (c *Core) holdContext() bool {
	b := c.cfg.BatchWait
	if !b.On() || c.cfg.Decode {
		return false
	}
	perGen := 1 + c.cfg.Spec.NextN
	gen, ctx := 0, 0
	for _, s := range c.running {
		if s.computed < s.promptLen {
			ctx += s.promptLen - s.computed
		} else {
			gen += perGen
		}
	}
	if gen == 0 {
		return false
	}
	room := c.budget - gen // c.budget is set: resetPass ran; MaxBatchedTokens > 0 (validated)
	slots := c.waiting.len()
	if c.cfg.MaxSeqs > 0 {
		slots = min(slots, max(c.cfg.MaxSeqs-len(c.running), 0))
	}
	for i := 0; i < slots && ctx < room; i++ {
		s := c.waiting.at(i)
		ctx += max(s.promptLen-s.computed, 1)
	}
	ctx = min(ctx, max(room, 0))
	if ctx == 0 {
		return false
	}
	if c.waitIters >= b.TimeoutIters || float64(ctx+gen) >= b.MaxTokensRatio*float64(c.cfg.MaxBatchedTokens) {
		c.waitIters = 0
		return false
	}
	c.waitIters++
	return true
}
