package engine

import "slices"

// Abort ends a waiting or running request between passes, as vLLM and
// SGLang do when a client goes away: it emits nothing, and its KV is freed
// (blocks already computed stay cached, inactive, as on completion). It
// reports false when the core does not hold the request in its waiting
// queue or running batch: unknown, parked for a lower-tier onboarding, or
// a disaggregated hold or reservation. A driver tries again after the
// request's next pass.
func (c *Core) Abort(id uint64) bool {
	for i, s := range c.waiting.items() {
		if s.id == id {
			c.waiting.remove(i)
			c.abort(s)
			return true
		}
	}
	for i, s := range c.running {
		if s.id == id {
			c.running = slices.Delete(c.running, i, i+1)
			c.abort(s)
			return true
		}
	}
	return false
}

// abort frees s. Between passes nothing refers to it, so its state is
// recycled now (a rank left without work steps no pass to recycle it).
func (c *Core) abort(s *seq) {
	c.kv.Release(&s.lease)
	c.live--
	c.free = append(c.free, s)
}

// Abort ends a waiting or running request between passes (see
// Core.Abort). A running request's computed pages go to the radix cache,
// as SGLang's abort caches an unfinished request.
func (c *SGLangCore) Abort(id uint64) bool {
	for i, r := range c.waiting.items() {
		if r.id == id {
			c.waiting.remove(i)
			c.release(r, 0)
			c.live--
			return true
		}
	}
	for i, r := range c.running {
		if r.id == id {
			c.running = slices.Delete(c.running, i, i+1)
			c.cacheUpTo(r, min(len(r.keys), r.materialized/c.page))
			c.release(r, r.cached)
			c.live--
			return true
		}
	}
	return false
}

// Abort aborts request id on whichever rank holds it (see Core.Abort).
func (w *Worker) Abort(id uint64) bool {
	for _, c := range w.Ranks {
		if c.Abort(id) {
			return true
		}
	}
	return false
}
