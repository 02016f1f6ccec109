package engine

import "github.com/dynosim/dynosim-web/timing"

// KVBM lower tiers on the vLLM/TensorRT-LLM core (spec §5): a tiers.Layer
// around the core's G1 pool takes the blocks it evicts (their slots stay
// quarantined until the copy ends), and admission brings a prompt's
// lower-tier prefix back before computing it: the G1 slots are reserved
// first, the request parks, and when its blocks have arrived it re-enters
// the front of the waiting queue with them as its G1-cached prefix.

// tickTiers brings the tiers to now at a pass start: finished offloads
// free their G1 slots, and requests whose blocks arrived register them in
// G1 and go back to the front of the waiting queue, in the order they
// parked. The first keeps its blocks; the others' stay cached in G1,
// inactive (pushFront), as the reference registers every swap-in.
func (c *Core) tickTiers(now timing.Time) {
	c.tier.Tick(now) // finished offloads free their G1 slots
	ready := c.tier.Ready()
	if len(ready) == 0 {
		return
	}
	bs := c.cfg.BlockSize
	back := c.unparked[:0]
	keep := c.parked[:0]
	for _, s := range c.parked {
		if !containsID(ready, s.id) {
			keep = append(keep, s)
			continue
		}
		// The blocks are computed KV now: findable, with Device Stored
		// events for the hashes that became visible.
		c.kv.Finalize(&s.lease, s.onboardFrom*bs, s.onboardTo*bs, s.hashes, s.locals)
		back = append(back, s)
	}
	clear(c.parked[len(keep):])
	c.parked = keep
	for i := len(back) - 1; i >= 0; i-- {
		c.pushFront(back[i])
	}
	clear(back)
	c.unparked = back[:0]
}

func containsID(ids []uint64, id uint64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

type onboarding uint8

const (
	notOnboarded onboarding = iota // nothing to bring back: admit as usual
	parkedForBlocks
	blockedOnOffload // G1 room is being offloaded: admission stops
)

// onboard starts bringing the waiting head's lower-tier prefix back to G1:
// the blocks after its G1-cached prefix (overlap blocks, as admission
// matched them) that G2, G3 or G4 hold, up to what the recompute rule lets
// it reuse.
func (c *Core) onboard(s *seq, overlap int) onboarding {
	bs := c.cfg.BlockSize
	limit := c.reusable(s, len(s.hashes)*bs) / bs
	if limit <= overlap {
		return notOnboarded
	}
	run := c.tier.Lookup(s.hashes[overlap:limit])
	if run == 0 {
		return notOnboarded
	}
	// Destination slots first, pinning the G1-cached part.
	if !c.kv.Allocate(&s.lease, (overlap+run)*bs, overlap, s.hashes) {
		if c.kv.Blocked() {
			return blockedOnOffload
		}
		return notOnboarded
	}
	k := c.tier.Onboard(s.id, s.hashes[overlap:overlap+run])
	if k == 0 {
		c.kv.Release(&s.lease)
		return notOnboarded
	}
	c.kv.Truncate(&s.lease, overlap+k)
	c.waiting.popFront()
	s.onboardFrom, s.onboardTo = overlap, overlap+k
	c.parked = append(c.parked, s)
	c.pass.Admissions = append(c.pass.Admissions, Admission{ID: s.id, Parked: true})
	return parkedForBlocks
}

// stall applies the stall rule (spec §5.6) to a pass that did no model
// work: while requests wait for onboarding or G1 slots for their offload
// copy, the pass ends at the earliest copy the core waits for (at least a
// nanosecond on), so replay neither spins nor stops.
func (c *Core) stall(p *Pass) {
	if c.tier == nil || p.End > p.Start || c.live == 0 {
		return
	}
	if at, ok := c.tier.Deadline(); ok {
		p.End = max(at, p.Start+1)
		p.Busy = true
	}
}
