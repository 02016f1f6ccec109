package engine

// Fits says whether a request of prompt tokens asking for maxOutput tokens
// (≥ 1) can ever complete on a core of config c when it is submitted, and
// if not the reason a replay ends it with (its rejected Signal's Reason):
// MaxModelLen when its prompt reaches max_model_len, KVCapacity when the
// KV cache it needs at its longest is more than the whole pool. A front end
// that refuses requests before they reach the engine (live mode's 400)
// asks this, so it refuses exactly what a prediction of the same request
// rejects; TestFitsAgreesWithTheEngine holds it to what each core does.
//
// At its longest a request holds the KV of every token but its last (that
// one is sampled, never computed): the prompt, then its output up to
// max_model_len. vLLM's core admits it while its prompt fits and rejects
// it once it outgrew the pool (preempted, it can never be re-admitted);
// SGLang's retracts it and rejects it once it could not decode one more
// token; TensorRT-LLM's GUARANTEED_NO_EVICT clamps the output to the pool
// at enqueue, so only a prompt that fills the pool is rejected. A
// disaggregated prefill worker gets the request limited to its first token
// (core/replay's submitPrefill).
func (c *Config) Fits(prompt, maxOutput int) Reason { return c.fits(prompt, maxOutput, false) }

// FitsReserved is Fits for a disaggregated decode worker's request on the
// bootstrap path: its prompt's KV reserved (Reserve), then decoded.
func (c *Config) FitsReserved(prompt, maxOutput int) Reason { return c.fits(prompt, maxOutput, true) }

func (c *Config) fits(prompt, maxOutput int, reserved bool) Reason {
	if why := c.PromptReason(prompt); why != NotRejected {
		return why
	}
	bs := max(c.BlockSize, 1)
	pool := c.NumBlocks * bs
	out := max(maxOutput, 0)
	if c.Prefill != nil {
		out = min(out, 1)
	}
	if c.Policy == TRTLLM && prompt < pool {
		out = min(out, pool-prompt)
	}
	longest := prompt + out
	if c.MaxModelLen > 0 {
		longest = min(longest, c.MaxModelLen)
	}
	held := max(prompt, longest-1)
	switch {
	case c.Policy == TRTLLM:
		held = prompt + out // the admission reserves every token
	case c.Policy == SGLang && reserved:
		// A decode step allocates the slot of the token it will sample
		// next (SGLang's out_cache_loc), one past the last kept.
		held = prompt + out
	case c.Policy == SGLang:
		// Output tokens also start a page of their own past the prompt's
		// last one (a prefilled prompt's pages go to the radix cache).
		held = (prompt+bs-1)/bs*bs + out + 1
	}
	if (held+bs-1)/bs > c.NumBlocks {
		return KVCapacity
	}
	return NotRejected
}

// PromptReason is why a prompt of n tokens is rejected whatever the pool
// holds (NotRejected if it is not): MaxModelLen when it reaches
// max_model_len, MaxBatchedTokens when chunked prefill is off and it is
// longer than max_batched_tokens (vLLM/TensorRT-LLM cores; SGLang chunks by
// its own sglang.chunked_prefill_size).
//
// Issue 30 item 7: such a prompt used to wait forever at the head of the
// queue and the replay aborted ("worker 0 cannot make progress"). When the
// config sets max_model_len, vLLM's own start-up rule (max_num_batched_tokens
// ≥ max_model_len without chunked prefill, vllm/config/scheduler.py
// SchedulerConfig._verify_args) is enforced at config time
// (ValidateSettings), so this never fires. Without max_model_len the limit
// is the model's context, which the simulator does not bound; there we
// reject the request rather than refuse the run, because that is what the
// refused vLLM config would come to, in vLLM's own words: it "effectively
// limits the maximum sequence length to max_num_batched_tokens and makes
// vLLM reject longer sequences" (as its front end rejects a prompt past
// max_model_len: the request fails, the server keeps serving). A trace is
// read as a stream, so refusing the whole run would need a second pass over
// it, and one long prompt in a million would throw away every other
// request's prediction; the report counts the rejected ones under
// rejected_by_reason.max_batched_tokens instead.
func (c *Config) PromptReason(n int) Reason {
	switch {
	case c.Policy == SGLang:
		return NotRejected
	case c.MaxModelLen > 0 && n >= c.MaxModelLen:
		return MaxModelLen
	case !c.ChunkedPrefill && c.MaxBatchedTokens > 0 && n > c.MaxBatchedTokens:
		return MaxBatchedTokens
	}
	return NotRejected
}
