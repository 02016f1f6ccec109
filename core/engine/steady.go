package engine

import (
	"slices"

	"github.com/dynosim/dynosim-web/timing"
)

// A steady decode pass (issue 34 item 1): every running request is past
// its prompt and computes its one pending token, nothing waits, and no
// request needs a new block. Most passes of a replay are such passes, and
// Step's general schedule (budgets, prefix credit, preemption, admission,
// the ready list) decides nothing in them. stepSteady runs the same steps
// in the same order, fused into one loop over the batch: the same
// allocations and finalizations, the same FPM accumulations, the same
// tokens drawn and the same timing evaluation, so the pass is the one
// Step's general path would return (TestItem34_1SteadyPass compares them).

// noSteady turns the steady path off (tests compare both paths).
var noSteady bool

// steady reports whether the next pass is a steady decode pass.
func (c *Core) steady() bool {
	if noSteady || c.tier != nil || c.spec != nil || c.cfg.Prefill != nil || c.cfg.Watch != 0 || c.cfg.BatchWait.On() ||
		c.waiting.len() > 0 || c.pending.len() > 0 || len(c.parked) > 0 || len(c.running) == 0 ||
		c.cfg.MaxBatchedTokens > 0 && c.cfg.MaxBatchedTokens < len(c.running) {
		return false
	}
	bs := c.cfg.BlockSize
	for _, s := range c.running {
		// s.length > slots·bs is ⌈length/bs⌉ > slots without the
		// integer division, dear per request and pass (issue 34 item 1).
		if s.computed != s.length-1 || s.computed < s.promptLen || s.complete(c.cfg.MaxModelLen) ||
			s.length > len(s.lease.Slots)*bs {
			return false
		}
	}
	return true
}

// stepSteady is Step for a steady decode pass.
func (c *Core) stepSteady(now timing.Time) *Pass {
	p := c.beginSteady(now)
	c.resetPass()
	n, total := len(c.running), 0
	// The FPM's decode KV variance in a local (c.fpmDecode, which only
	// fillFPM reads, stays empty): one sample, the most common batch, has
	// variance 0 as welford gives it, without the division (issue 34 item 1).
	var kvVar welford
	for _, s := range c.running {
		// schedule: one decode token, its room already held (steady).
		before := s.computed
		if !c.kv.Quiet(&s.lease, before) { // most tokens: both calls would do nothing
			c.kv.Allocate(&s.lease, before+1, 0, s.hashes)
			c.kv.Finalize(&s.lease, before, before+1, s.hashes, s.locals)
		}
		s.pass, s.passTokens, s.passPrompt, s.passPre = c.passID, 1, 0, s.promptLen
		s.computed = before + 1
		// emit: every request is ready.
		if n > 1 {
			kvVar.add(float64(s.length))
		}
		total += s.length
	}
	c.budget -= n
	c.worked = true
	if c.decodeSteady(&p.Signals) {
		c.running = slices.DeleteFunc(c.running, func(s *seq) bool { return s.done })
	}
	p.End = now + min(c.price(n, total), timing.Horizon)
	if c.events != nil {
		p.Events = c.events.Drain()
	}
	// The pass's FPM and counters, each written once, not cleared first
	// (issue 34 item 1): fillFPM's values for a pass with no prefill and
	// nothing queued, and one token per request. c.counters.add(p.Counters)
	// for the two counters that move: copying the whole struct right after
	// its field stores stalled on store forwarding; the others add zero.
	p.FPM = FPM{DecodeRequests: n, DecodeKVTokens: total, VarDecodeKVTokens: kvVar.variance(), Wall: p.End - p.Start}
	p.Counters = Counters{AcceptedTokens: n, DecodeForwards: n}
	c.counters.AcceptedTokens += n
	c.counters.DecodeForwards += n
	c.metricsInto(&p.Metrics, c.kv.Pool.Active(), len(c.parked))
	p.Busy = true
	c.recycle()
	return p
}

// beginSteady is begin for a steady pass, which writes all of its FPM,
// Counters and Metrics (metricsInto) itself: they are not cleared first.
func (c *Core) beginSteady(now timing.Time) *Pass {
	p := &c.pass
	p.Start, p.End = now, 0
	p.Signals, p.Admissions, p.Events, p.Reserved = p.Signals[:0], p.Admissions[:0], nil, p.Reserved[:0]
	p.Busy, p.Watched = false, nil
	return p
}

// decodeSteady is book.decode for a steady pass's batch, c.running: no
// speculation (one token each), no prefill handoff, the block memory.
// Same steps in the same order; the pass's two counters, one per request,
// are set by the caller.
func (c *Core) decodeSteady(out *[]Signal) (anyDone bool) {
	sigs := *out
	for _, s := range c.running {
		var tok uint32 // the planned token, or one from the output stream
		if s.planned != nil {
			tok = s.planned[s.generated]
		} else {
			tok = uint32(c.rng.Uint64())
		}
		before := s.length
		s.length++
		s.generated++
		c.blocks.grow(s, tok)
		done := s.complete(c.cfg.MaxModelLen)
		sigs = append(sigs, Signal{ID: s.id, Token: tok, HasToken: true, Completed: done, Cached: c.firstSignal(s)})
		c.blocks.settle(s, before, done)
		if done {
			c.finish(s)
			anyDone = true
		}
	}
	*out = sigs
	return anyDone
}
