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
	if c.MaxModelLen > 0 && prompt >= c.MaxModelLen && c.Policy != SGLang {
		return MaxModelLen
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
