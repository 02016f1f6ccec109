package kv

import "slices"

// accounting is the slot bookkeeping the native pool (Pool) and the lineage
// pool (LineagePool) share: a stack of free slot ids, the slots promised to
// reservations but not yet allocated, the number of inactive cached slots
// and the removal hook. The pools differ only in how they find, keep and
// evict inactive slots (LRU list, leaf heap).
//
// Slots are allocated on first touch: ids below next have been used once
// (each is occupied or on the free stack), ids from next on never were, so
// a pool's memory follows the blocks a run touches, not its capacity (a
// 2^24-block pool a short run barely fills cost a gigabyte up front;
// issue 29 item 9). A fresh id is taken only when the free stack is empty,
// which hands out the same ids in the same order as a stack prefilled with
// every slot, lowest first.
type accounting struct {
	capacity int
	free     []int32 // stack of freed slot ids (all below next)
	next     int32   // the lowest never-used slot id
	reserved int     // slots promised to reservations, not yet allocated
	inactive int
	onRemove func(hash uint64)
	// quarantined slots were evicted into a lower tier whose copy is still
	// in flight: neither free nor usable (the lineage pool with tiers).
	quarantined int
	blocked     bool // the last Reserve failed only for want of them
	// claimed slots are promised to blocked reservations: the room their
	// evictions will free, kept from others until they retry (Claim).
	claimed int
}

func newAccounting(capacity int) accounting { return accounting{capacity: capacity} }

// unused is the number of slots not occupied: freed ones and never-used ones.
func (a *accounting) unused() int { return len(a.free) + a.capacity - int(a.next) }

// Capacity is the number of slots.
func (a *accounting) Capacity() int { return a.capacity }

// Free is the number of slots neither occupied, reserved nor claimed. With
// claims it can be negative: room still being copied out is promised.
func (a *accounting) Free() int { return a.unused() - a.reserved - a.claimed }

// Claimed is the number of slots promised to blocked reservations.
func (a *accounting) Claimed() int { return a.claimed }

// Claim promises n more slots (negative: gives them back) to a reservation
// that Blocked: the quarantined room it waits for is not taken by others.
func (a *accounting) Claim(n int) { a.claimed += n }

// Active is the number of slots in use by requests: occupied slots that are
// not inactive, plus reserved ones.
func (a *accounting) Active() int { return a.capacity - a.unused() - a.inactive + a.reserved }

// Inactive is the number of cached slots nobody references or pins.
func (a *accounting) Inactive() int { return a.inactive }

// Quarantined is the number of evicted slots waiting for their offload copy.
func (a *accounting) Quarantined() int { return a.quarantined }

// Blocked reports whether the last Reserve failed only because the room it
// needs is being copied to a lower tier: it frees when the copies end, so
// the caller waits rather than preempting.
func (a *accounting) Blocked() bool { return a.blocked }

// SetOnRemove sets the function called with each hash whose last copy was
// evicted, in eviction order.
func (a *accounting) SetOnRemove(f func(hash uint64)) { a.onRemove = f }

// take consumes one reserved slot and returns its id: a freed one, else
// the next never-used one, which the caller's slot table grows to hold
// (fresh reports that).
func (a *accounting) take() (c int32, fresh bool) {
	a.reserved--
	if n := len(a.free); n > 0 {
		c = a.free[n-1]
		a.free = a.free[:n-1]
		return c, false
	}
	c = a.next
	a.next++
	return c, true
}

// grown is slots with room for one more, by doubling up to capacity: a
// pool's slot table grows with use (take's fresh ids), and append's 1.25×
// steps for large slices would allocate about five times the final table
// on the way.
func grown[T any](slots []T, capacity int) []T {
	if len(slots) < cap(slots) {
		return slots
	}
	return slices.Grow(slots, max(1, min(max(len(slots), 64), capacity-len(slots))))
}

// recycle returns slot c to the free stack.
func (a *accounting) recycle(c int32) { a.free = append(a.free, c) }

// removed reports that the last copy of hash was evicted.
func (a *accounting) removed(hash uint64) {
	if a.onRemove != nil {
		a.onRemove(hash)
	}
}

// holds counts the holders of a cached slot: references (requests using
// it) and pins (reservations about to). A cached slot with neither is
// inactive.
type holds struct{ refs, pins int32 }

func (h *holds) held() bool { return h.refs > 0 || h.pins > 0 }

// acquire turns a pin into a reference.
func (h *holds) acquire() { h.pins--; h.refs++ }

// unpin drops a pin and reports whether the slot became inactive.
func (h *holds) unpin() bool { h.pins--; return h.refs == 0 && h.pins == 0 }

// drop drops a reference and reports whether the slot became inactive.
func (h *holds) drop() bool { h.refs--; return h.refs == 0 && h.pins == 0 }
