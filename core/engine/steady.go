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
		if s.computed != s.length-1 || s.computed < s.promptLen || s.complete(c.cfg.MaxModelLen) ||
			(s.length+bs-1)/bs > len(s.lease.Slots) {
			return false
		}
	}
	return true
}

// stepSteady is Step for a steady decode pass.
func (c *Core) stepSteady(now timing.Time) *Pass {
	p := c.begin(now)
	c.resetPass()
	n, total := len(c.running), 0
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
		c.fpmDecode.add(float64(s.length))
		total += s.length
	}
	c.budget -= n
	c.worked = true
	p.FPM.DecodeRequests = n
	p.FPM.DecodeKVTokens = total
	if c.decode(c.running, c.burstLimit, &p.Signals) {
		c.running = slices.DeleteFunc(c.running, func(s *seq) bool { return s.done })
	}
	p.End = now + min(c.price(n, total), timing.Horizon)
	if c.events != nil {
		p.Events = c.events.Drain()
	}
	c.fillFPM(p)
	c.counters.add(p.Counters)
	c.metricsInto(&p.Metrics, c.kv.Pool.Active(), len(c.parked))
	p.Busy = true
	c.recycle()
	return p
}
