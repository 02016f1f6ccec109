package engine

import (
	"slices"

	"github.com/dynosim/dynosim-web/timing"
)

// SGLang's scheduler event loop (SGLangConfig.Loop PrefillFirst and
// MixedChunk; engine.semantics real), read from sgl-project/sglang,
// python/sglang/srt/managers/scheduler.py:
//
//   - event_loop_normal runs one batch per iteration, the one
//     get_next_batch_to_run returns. That merges the last prefill batch
//     into the running batch, then asks get_new_batch_prefill for a new
//     prefill batch and, if there is one, runs it ("Run prefill first if
//     possible"): the running batch does not decode in that iteration.
//     Only when no prefill batch can be formed does update_running_batch
//     check decode memory (retracting if short, else decaying the new-token
//     ratio) and run the decode step.
//   - A prefill (extend) forward samples the next token of every request
//     whose prompt it completes (process_batch_result_prefill appends it to
//     output_ids; a chunked request's intermediate chunk samples none), so
//     the first token is out at the prefill pass's end.
//   - With --enable-mixed-chunk (is_mixed_chunk), PrefillAdder is given the
//     running batch's size as mixed_with_decode_tokens, which it takes off
//     the prefill and chunk budgets, and get_new_batch_prefill mixes the
//     running batch into the new prefill batch (mix_with_running): one
//     forward prefills the chunk and decodes every running request.
//   - PrefillAdder.add_one_req chunks a prompt longer than what is left of
//     the chunk budget (rem_chunk_tokens), not longer than
//     chunked_prefill_size as the reference does.
//   - When an iteration finds nothing to run the loop resets the new-token
//     ratio to its initial value (self_check_during_idle).
//
// A decode worker keeps the additive pass: its requests arrive computed
// and a retracted one resumes without a prefill forward (spec §7.3).

// budgets are the prefill and chunk token budgets of a pass under the real
// loop: under MixedChunk the running batch's decode tokens share them.
func (c *SGLangCore) budgets() (input, chunk int) {
	input, chunk = c.sg.MaxPrefillTokens, c.sg.ChunkedPrefillSize
	if c.sg.Loop == MixedChunk {
		input -= len(c.running)
		chunk -= len(c.running)
	}
	return input, chunk
}

// chunking says whether a chunked prefill is part-way through (SGLang's
// Scheduler.chunked_req): its next chunk is work even with nothing running.
func (c *SGLangCore) chunking() bool {
	return c.waiting.len() > 0 && c.midPrefill(c.waiting.front())
}

// loopPass runs the pass of one event-loop iteration once admit formed the
// prefill batch, and returns its duration and whether it was a decode pass
// (the new-token ratio decays only then).
func (c *SGLangCore) loopPass() (d timing.Time, decodePass bool) {
	if len(c.batch) == 0 {
		return c.decode(), true
	}
	n, isl, prefix := c.prefillShape()
	if c.sg.Loop != MixedChunk || len(c.running) == 0 {
		c.placeBatch()
		c.sample()
		return c.cfg.Scale.Prefill(c.cfg.Model, n, isl, prefix), false
	}
	// Mixed: the running batch decodes in the same forward. It is decoded
	// before the prefill batch joins it, so the prompts completed here emit
	// only the token their prefill samples.
	dec := c.decode()
	k, kv := c.pass.FPM.DecodeRequests, c.pass.FPM.DecodeKVTokens
	c.placeBatch()
	c.sample()
	if c.mixed != nil && c.spec == nil && k > 0 && isl > prefix {
		// One forward over the chunk and the decode tokens: the weights
		// stream once (timing.Mixed, as the vLLM core prices its passes).
		return c.cfg.Scale.Mixed(c.mixed, n, isl, prefix, k, kv, kv/k, c.total*c.page), false
	}
	return c.cfg.Scale.Prefill(c.cfg.Model, n, isl, prefix) + dec, false
}

// sample emits the token the prefill forward samples for every request of
// the batch whose prompt it completed (a retracted request's re-prefill
// samples its next token likewise). It is not a decode forward: the
// accept-length counters and the FPM's decode requests leave it out. Its page is allocated now, as a decode
// token's is; when the pool cannot give them even by eviction, the requests
// take their token at the next decode step instead.
func (c *SGLangCore) sample() {
	ready, growth := c.sampled[:0], 0
	for _, r := range c.batch {
		if r.computed == r.length && r.remaining(0) > 0 && c.room(r) >= 1 {
			ready = append(ready, r)
			growth += c.growth(r, 1)
		}
	}
	c.sampled = ready[:0]
	if len(ready) == 0 || c.pool.Available()+c.tree.Evictable()/c.page < growth {
		return
	}
	if short := growth - c.pool.Available(); short > 0 {
		c.evict(short)
	}
	var ok bool
	if c.reserve, ok = c.pool.Alloc(growth, c.reserve[:0]); !ok {
		return
	}
	p, anyDone := &c.pass, false
	for _, r := range ready {
		var tok uint32 // the planned token, or one from the output stream
		if r.planned != nil {
			tok = r.planned[r.generated]
		} else {
			tok = uint32(c.rng.Uint64())
		}
		before := r.length
		r.length++
		r.generated++
		c.pageMem.grow(r, tok)
		done := r.complete(c.cfg.MaxModelLen)
		sig := Signal{ID: r.id, Token: tok, HasToken: true, Completed: done, Cached: c.firstSignal(r)}
		if h := c.cfg.Prefill; h != nil && done {
			sig.HandoffMs = h.DelayMs(r.promptLen)
		}
		p.Signals = append(p.Signals, sig)
		c.pageMem.settle(r, before, done)
		if done {
			c.finish(r)
			anyDone = true
		}
	}
	c.pool.Free(c.reserve...)
	c.reserve = c.reserve[:0]
	if anyDone {
		c.running = slices.DeleteFunc(c.running, func(r *seq) bool { return r.done })
	}
}

// watchPass fills p.Watched for the watched request: its prefill chunk, its
// decode tokens (the signals it got) and a retraction. Only runs that
// watch a request pay for the scan.
func (c *SGLangCore) watchPass(p *Pass) {
	var w Watched
	loop := c.sg.Loop != AdditivePass && !c.cfg.Decode
	for _, s := range p.Signals {
		if s.ID == c.cfg.Watch && s.HasToken {
			w.In = true
			w.DecodeTokens++
		}
	}
	for _, r := range c.batch {
		if r.id == c.cfg.Watch {
			// A prompt completed here has decoded too (or, under the real
			// loop, had its prefill sample a token): those tokens are
			// materialized but not part of the chunk.
			w.In, w.PrefillTokens = true, r.computed-r.passPrefix-w.DecodeTokens
			if loop {
				w.DecodeTokens = 0 // no decode step: the prefill sampled it (sample)
			}
		}
	}
	for _, r := range c.retracted {
		w.Preempted = w.Preempted || r.id == c.cfg.Watch
	}
	if !w.In && !w.Preempted {
		return
	}
	if w.In {
		// The decodes, and the chunks still short of their prompt (a
		// prompt that completed decodes in the same pass, but under the
		// real loop).
		w.Batch = p.FPM.DecodeRequests
		for _, r := range c.batch {
			if loop || r.computed < r.length {
				w.Batch++
			}
		}
	}
	c.watch(w)
}
