package engine

import (
	"math"
	"slices"

	"github.com/dynosim/dynosim-web/timing"
)

type outcome uint8

const (
	scheduled outcome = iota
	blocked
	currentPreempted
	waitsForOffload // its KV room is being copied to a lower tier
)

// cost is the prefix-cache credit of a request at admission.
type cost struct {
	cached, activeCached int
	overlap              int // resident prefix blocks (onboarding starts after them)
}

// Step runs one forward pass starting at now (spec §2.2). A pass that
// schedules and emits nothing ends at now.
func (c *Core) Step(now timing.Time) *Pass {
	if c.steady() {
		return c.stepSteady(now) // steady.go
	}
	p := c.begin(now)
	c.resetPass()
	if c.tier != nil {
		c.tickTiers(now)
	}
	// Transferred prompts reserve their room before anything else runs.
	if c.pending.len() > 0 {
		c.grantReservations()
	}
	// TensorRT-LLM batch waiting (batchwait.go): a held pass runs its
	// generation requests only.
	hold := c.holdContext()
	c.scheduleRunning(hold)
	if !hold {
		c.admitWaiting()
	}
	if w := p.Watched; w != nil && w.In {
		for _, s := range c.running {
			if s.pass == c.passID {
				w.Batch++
			}
		}
	}
	// Emission first: a speculative reservation may preempt a request
	// scheduled in this pass and so change the prefill batch.
	n, kv := c.emit()
	p.Signals = append(p.Signals, c.tokens...)
	p.Signals = append(p.Signals, c.rejected...)
	p.End = now + min(c.price(n, kv), timing.Horizon) // saturated: the replay stops at the horizon
	if c.tier != nil {
		c.tier.Flush() // a partial offload batch goes now
		c.stall(p)
	}
	if c.events != nil {
		p.Events = c.events.Drain()
	}
	c.fillFPM(p)
	c.counters.add(p.Counters)
	c.metricsInto(&p.Metrics, c.kv.Pool.Active(), len(c.parked))
	// A pass that only preempted still changed the state: the next pass
	// re-admits from the front of the queue, so the worker is not stuck.
	// So did one that computed tokens but no prompt tokens (a readmitted
	// request recomputing its generated ones: free under the timing model).
	if len(p.Signals) > 0 || c.batchCount > 0 || len(c.ready) > 0 || c.preempted || c.worked || len(p.Reserved) > 0 {
		p.Busy = true
	}
	c.recycle()
	return p
}

// resetPass clears the core's per-pass state.
func (c *Core) resetPass() {
	c.passID++
	c.tokens, c.rejected, c.ready = c.tokens[:0], c.rejected[:0], c.ready[:0]
	c.batchCount, c.batchISL, c.batchPrefix = 0, 0, 0
	c.fpmPrefill, c.fpmDecode = welford{}, welford{}
	c.preempted, c.worked = false, false
	c.budget = c.cfg.MaxBatchedTokens
	if c.budget == 0 {
		c.budget = math.MaxInt
	}
}

// scheduleRunning schedules the running requests first, in admission
// order; with holdContext, only those past their prompt.
func (c *Core) scheduleRunning(holdContext bool) {
	for c.cursor = 0; c.cursor < len(c.running) && c.budget > 0; {
		s := c.running[c.cursor]
		if holdContext && s.computed < s.promptLen {
			c.cursor++
			continue
		}
		var cs cost
		if s.computed == 0 {
			cs = c.prefixCost(s)
		}
		switch c.schedule(s, false, cs) {
		case scheduled:
			c.cursor++
		case blocked:
			c.cursor = len(c.running)
		case waitsForOffload:
			c.cursor++ // the others may not need new blocks
		}
	}
}

// admitWaiting admits from the waiting queue, strictly FIFO, unless
// someone was preempted.
func (c *Core) admitWaiting() {
	p := &c.pass
	for !c.preempted && c.waiting.len() > 0 && (c.cfg.MaxSeqs == 0 || len(c.running) < c.cfg.MaxSeqs) {
		s := c.waiting.front()
		admit, cs := c.admission(s)
		if admit == wait {
			break
		}
		if admit == reject {
			c.reject(s)
			continue
		}
		if c.tier != nil && len(s.lease.Slots) == 0 && !c.cfg.Decode {
			if o := c.onboard(s, cs.overlap); o == parkedForBlocks {
				continue
			} else if o == blockedOnOffload {
				break
			}
		}
		if c.schedule(s, true, cs) != scheduled {
			break
		}
		p.Admissions = append(p.Admissions, Admission{ID: s.id, Reused: s.admitCached, Again: s.preemptions > 0})
		if s.passTokens == 0 && c.budget == 0 {
			break
		}
	}
}

// reject ends the waiting head s, which can never run.
func (c *Core) reject(s *seq) {
	c.waiting.popFront()
	c.kv.Release(&s.lease)
	c.live--
	c.retire(s)
	why := c.cfg.PromptReason(s.promptLen)
	if why == NotRejected {
		why = KVCapacity
	}
	c.rejected = append(c.rejected, Signal{ID: s.id, Completed: true, Rejected: true, Reason: why, Cached: -1})
	c.pass.Busy = true
}

// price is the duration of the pass: its prefill chunks and its decode
// step of n sequences over kv tokens.
func (c *Core) price(n, kv int) timing.Time {
	// A decode worker's prompts arrive computed: recompute is free.
	prefills := !c.cfg.Decode && c.batchCount > 0
	var pass timing.Time
	if c.mixed != nil && prefills && c.isl() > c.prefix() && n > 0 {
		// One forward over the prefill chunks and the decode tokens (vLLM
		// V1 and TRT-LLM batch them together): the weights stream once.
		if c.spec != nil { // drafts and k+1 verify tokens (spec.go)
			return c.spec.mixedTime(c.cfg.Scale, c.mixed, c.batchCount, c.isl(), c.prefix(), n, kv, c.cfg.NumBlocks*c.cfg.BlockSize)
		}
		return c.cfg.Scale.Mixed(c.mixed, c.batchCount, c.isl(), c.prefix(), n, kv, kv/n, c.cfg.NumBlocks*c.cfg.BlockSize)
	}
	if prefills {
		pass = c.cfg.Scale.Prefill(c.cfg.Model, c.batchCount, c.isl(), c.prefix())
	}
	switch {
	case n > 0 && c.spec != nil:
		pass += c.spec.decodeTime(c.cfg.Scale, c.cfg.Model, n, kv, c.cfg.NumBlocks*c.cfg.BlockSize)
	case n > 0:
		ctx := kv // kv/n without the integer division for a batch of one, the most common
		if n != 1 {
			ctx = kv / n
		}
		pass += c.cfg.Scale.Decode(c.cfg.Model, n, kv, ctx, c.cfg.NumBlocks*c.cfg.BlockSize)
	}
	return pass
}

func (c *Core) isl() int {
	if c.batchCount == 0 {
		return 0
	}
	return c.batchISL / c.batchCount
}

func (c *Core) prefix() int {
	if c.batchCount == 0 {
		return 0
	}
	return c.batchPrefix / c.batchCount
}

// schedule decides how many tokens of s run in this pass and allocates
// their KV (spec §2.3).
func (c *Core) schedule(s *seq, fromWaiting bool, cs cost) outcome {
	bs := c.cfg.BlockSize
	cached := 0
	if s.computed == 0 {
		cached = cs.cached
	}
	before := s.computed + cached
	promptBefore := min(before, s.promptLen)
	remaining := s.length - before
	promptRemaining := s.promptLen - promptBefore
	if !c.cfg.ChunkedPrefill && promptRemaining > 0 && promptRemaining > c.budget {
		return blocked
	}
	desired := min(remaining, c.budget)
	if desired == 0 && remaining > 0 {
		return blocked
	}
	after := before + desired
	for !c.kv.Allocate(&s.lease, after, cached/bs, s.hashes) {
		if o := c.noRoom(s, fromWaiting); o != scheduled {
			return o
		}
	}
	c.kv.Finalize(&s.lease, before, after, s.hashes, s.locals)
	promptTokens := min(after, s.promptLen) - promptBefore
	s.pass, s.passTokens, s.passPrompt, s.passPre = c.passID, desired, promptTokens, promptBefore
	if s.id == c.cfg.Watch {
		c.watch(Watched{In: true, PrefillTokens: promptTokens, DecodeTokens: desired - promptTokens})
	}
	if promptTokens > 0 {
		c.batchCount++
		c.batchISL += promptBefore + promptTokens
		c.batchPrefix += promptBefore
		c.fpmPrefill.add(float64(s.promptLen))
		c.pass.FPM.PrefillTokens += promptTokens
		c.pass.FPM.PrefillKVTokens += promptBefore
	}
	s.computed = after
	if fromWaiting {
		c.waiting.popFront()
		// A readmission reuses what is cached now; only prompt tokens count.
		s.admitCached = min(cached, s.promptLen)
		if s.fresh {
			s.cachedPrefix = cached
			s.fresh = false
		}
		s.status = running
		c.running = append(c.running, s)
	}
	c.budget -= desired
	c.worked = c.worked || desired > 0
	return scheduled
}

// noRoom decides what a request whose KV allocation failed does: wait, or
// preempt a running request and retry (scheduled), unless that was itself.
func (c *Core) noRoom(s *seq, fromWaiting bool) outcome {
	if c.kv.Blocked() {
		// The room is on its way back from a lower-tier copy: wait for it
		// rather than preempt (the stall rule wakes the core).
		return waitsForOffload
	}
	if c.cfg.Policy == TRTLLM || fromWaiting {
		// GUARANTEED_NO_EVICT never preempts: its admission reserved the
		// room. A waiting request never preempts a running one (as in
		// vLLM v1; its admission counted the room): it waits.
		return blocked
	}
	switch v := c.preempt(); v {
	case nil:
		return blocked
	case s:
		return currentPreempted
	}
	return scheduled
}

// preempt evicts one running request (recompute-style: its KV is released
// and it goes to the front of the waiting queue) and returns it.
func (c *Core) preempt() *seq {
	if len(c.running) == 0 {
		return nil
	}
	i := len(c.running) - 1
	switch {
	case c.cfg.PriorityScheduling:
		i = c.victim()
	case c.cfg.Preemption == FIFO:
		i = 0
	}
	v := c.running[i]
	c.running = append(c.running[:i], c.running[i+1:]...)
	if i < c.cursor {
		c.cursor--
	}
	if v.pass == c.passID {
		// Undo its work in this pass.
		c.budget += v.passTokens
		if v.passPrompt > 0 {
			c.batchCount--
			c.batchISL -= v.passPre + v.passPrompt
			c.batchPrefix -= v.passPre
			c.fpmPrefill.remove(float64(v.promptLen))
			c.pass.FPM.PrefillTokens -= v.passPrompt
			c.pass.FPM.PrefillKVTokens -= v.passPre
		}
		v.pass = 0
	}
	if v.id == c.cfg.Watch {
		c.watch(Watched{Preempted: true})
	}
	c.kv.Release(&v.lease)
	v.status = preempted
	v.computed = 0
	v.preemptions++
	c.preemptions++
	c.preempted = true
	c.pushFront(v)
	return v
}

// pushFront puts s first in the waiting queue. With lower tiers the
// request it displaces gives back what it held as the head: the room it
// claimed and the prefix it onboarded (which stays cached in G1, inactive).
// Only the head holds anything, so what waits behind it never keeps it
// from the room it needs.
func (c *Core) pushFront(s *seq) {
	if c.cfg.PriorityScheduling {
		c.enqueue(s) // by its key, as vLLM's PriorityRequestQueue.prepend_request
		return
	}
	if c.tier != nil && c.waiting.len() > 0 {
		h := c.waiting.front()
		c.kv.Release(&h.lease)
		h.onboardFrom, h.onboardTo = 0, 0
	}
	c.waiting.pushFront(s)
}

type decision uint8

const (
	admit decision = iota
	wait
	reject
)

// admission applies the capacity policy to the head of the waiting queue.
func (c *Core) admission(s *seq) (decision, cost) {
	bs, nb := c.cfg.BlockSize, c.cfg.NumBlocks
	if c.cfg.PromptReason(s.promptLen) != NotRejected {
		return reject, cost{} // max_model_len, or no pass could hold the prompt
	}
	if c.cfg.Policy == TRTLLM {
		return c.admissionTRT(s)
	}
	known := s.knownBlocks(bs)
	if known > nb {
		// Fresh requests are rejected once; a preempted one that has grown
		// past the whole pool could never run again, so it is rejected too
		// instead of waiting forever (the reference would hang).
		return reject, cost{}
	}
	cs := c.prefixCost(s)
	available := nb - c.kv.Pool.Active()
	// Blocks s already holds (an onboarded prefix) need no room, reused
	// or recomputed in place.
	needed := known - max(cs.activeCached/bs, len(s.lease.Slots))
	if needed > available {
		return wait, cs
	}
	return admit, cs
}

// prefixCost is the prefix-cache credit of s with vLLM's recompute rule: a
// request that still needs logits recomputes at least its last token, so a
// block-aligned full hit gives back its last block.
func (c *Core) prefixCost(s *seq) cost {
	overlap, active := c.kv.Match(s.hashes)
	bs := c.cfg.BlockSize
	cs := cost{cached: c.reusable(s, overlap*bs), activeCached: min(active*bs, s.length), overlap: overlap}
	if c.cfg.Policy != VLLM {
		return cs
	}
	if cs.cached < overlap*bs {
		// Only active blocks inside the prefix that is reused count: with
		// duplicate copies an active block may sit past an inactive one,
		// in the part that is recomputed.
		_, active = c.kv.Match(s.hashes[:cs.cached/bs])
		cs.activeCached = active * bs
	}
	cs.activeCached = min(cs.activeCached, cs.cached)
	return cs
}

// reusable is how many of the first cached tokens of s it may reuse. vLLM
// recomputes at least the last token of a request that still needs logits,
// so a block-aligned full hit gives back its last block; TensorRT-LLM uses
// cached tokens as computed.
func (c *Core) reusable(s *seq, cached int) int {
	bs := c.cfg.BlockSize
	cached = min(cached, s.length)
	if c.cfg.Policy != VLLM {
		return cached
	}
	if !s.complete(c.cfg.MaxModelLen) {
		cached = min(cached, (s.length-1)/bs*bs)
	}
	if c.spec != nil && cached >= bs {
		// MTP/Eagle recompute: the draft head needs the hidden states of
		// the last cached block, so one more block is recomputed (P1).
		cached -= bs
	}
	return cached
}

// admissionTRT is GUARANTEED_NO_EVICT (spec §2.9): a request is admitted
// only if the pool can hold its prompt plus maximum output on top of what
// every running request may still grow to.
func (c *Core) admissionTRT(s *seq) (decision, cost) {
	bs, nb := c.cfg.BlockSize, c.cfg.NumBlocks
	full := (s.promptLen + s.maxOutput + bs - 1) / bs
	if s.fresh && full > nb {
		return reject, cost{}
	}
	overlap, active := c.kv.Match(s.hashes)
	cs := cost{cached: min(overlap*bs, s.length), activeCached: min(active*bs, s.length), overlap: overlap}
	available := nb - c.kv.Pool.Active()
	for _, r := range c.running {
		available -= (r.promptLen+r.maxOutput+bs-1)/bs - len(r.lease.Slots)
	}
	if full-max(cs.activeCached/bs, len(s.lease.Slots)) > available {
		return wait, cs
	}
	return admit, cs
}

// emit samples tokens for every ready request (spec §2.6; with speculation
// §2.7) and returns the decode step's batch and KV tokens, which Step
// prices with the prefill.
func (c *Core) emit() (batch, kvTokens int) {
	p := &c.pass
	keep := c.running[:0]
	for _, s := range c.running {
		if s.computed < s.length {
			keep = append(keep, s)
			continue
		}
		if s.complete(c.cfg.MaxModelLen) {
			p.Signals = append(p.Signals, Signal{ID: s.id, Completed: true, Cached: c.firstSignal(s)})
			c.finish(s)
			continue
		}
		c.ready = append(c.ready, s)
		keep = append(keep, s)
	}
	c.running = keep
	if c.spec != nil && len(c.ready) > 0 && !c.reserveBursts() {
		c.ready = c.ready[:0] // no room for the bursts: emit nothing
	}
	n := len(c.ready)
	if n == 0 {
		return 0, 0
	}
	total := 0
	for _, s := range c.ready {
		c.fpmDecode.add(float64(s.length))
		total += s.length
	}
	if c.cfg.Prefill != nil {
		c.handOff()
		return 0, 0
	}
	p.FPM.DecodeRequests = n
	p.FPM.DecodeKVTokens = total
	if c.decode(c.ready, c.burstLimit, &c.tokens) {
		c.running = slices.DeleteFunc(c.running, func(s *seq) bool { return s.done })
	}
	return n, total
}

// handOff emits a prefill worker's single token, which comes out of the
// prefill pass: no decode step is charged, and the request ends here.
func (c *Core) handOff() {
	h := c.cfg.Prefill
	for _, s := range c.ready {
		tok := uint32(c.rng.Uint64()) // drawn even when planned, as always
		if s.planned != nil {
			tok = s.planned[0]
		}
		s.length++
		s.generated++
		c.tokens = append(c.tokens, Signal{ID: s.id, Token: tok, HasToken: true, Completed: true,
			Cached: c.firstSignal(s), HandoffMs: h.DelayMs(s.promptLen)})
		c.finish(s)
	}
	c.running = slices.DeleteFunc(c.running, func(s *seq) bool { return s.done })
}

func (c *Core) fillFPM(p *Pass) {
	f := &p.FPM
	f.PrefillRequests = c.batchCount
	f.VarPrefillLength = c.fpmPrefill.variance()
	f.VarDecodeKVTokens = c.fpmDecode.variance()
	c.queued(f, c.parked)
	f.Wall = p.End - p.Start
}

// welford accumulates a population variance.
type welford struct {
	n        int
	mean, m2 float64
}

func (w *welford) add(x float64) {
	w.n++
	d := x - w.mean
	w.mean += d / float64(w.n)
	w.m2 += float64(d * (x - w.mean))
}

func (w *welford) remove(x float64) {
	if w.n <= 1 {
		*w = welford{}
		return
	}
	d := x - w.mean
	w.mean -= d / float64(w.n-1)
	w.m2 -= float64(d * (x - w.mean))
	w.n--
}

func (w welford) variance() float64 {
	if w.n == 0 {
		return 0
	}
	return w.m2 / float64(w.n)
}
