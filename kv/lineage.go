package kv

import "github.com/dynosim/dynosim-web/internal/idmap"

// BlockPool is the G1 block pool a Manager drives: the native pool (Pool) or
// the KVBM-style lineage pool (LineagePool).
type BlockPool interface {
	Capacity() int
	Free() int     // slots neither occupied nor reserved
	Active() int   // slots in use by requests (incl. reserved)
	Inactive() int // cached slots nobody references
	Lookup(hash uint64) (copy int32, ok bool)
	MatchPrefix(hashes []uint64) (overlap, active int)
	Reserve(prefix []int32, fresh int) bool
	Cancel(prefix []int32, unused int)
	Acquire(copy int32)
	AllocatePrivate() int32
	// Register makes a private copy findable under hash; parent is the
	// copy holding the previous block of the sequence (-1 for the first).
	// It returns the copy the holder keeps from now on (the lineage pool
	// keeps one copy per hash and hands back the existing one) and whether
	// the hash just became visible to routers.
	Register(copy int32, hash uint64, parent int32) (held int32, first bool)
	Release(copy int32)
	SetOnRemove(func(hash uint64))
	Quarantined() int
	Blocked() bool
	Claim(n int)
	Claimed() int
}

var (
	_ BlockPool = (*Pool)(nil)
	_ BlockPool = (*LineagePool)(nil)
)

// Register implements BlockPool: the native pool keeps every physical copy
// (two requests that computed the same block each hold one), matching
// vLLM's physical occupancy.
func (p *Pool) Register(copy int32, hash uint64, parent int32) (int32, bool) {
	return copy, p.CachePrivate(copy, hash)
}

// LineagePool is the KVBM-style G1 pool (spec §4.4, kvbm-logical with the
// default lineage eviction backend). It differs from the native pool in two
// ways that show in occupancy and events:
//
//   - one physical block per hash: registering a block whose hash is
//     already resident collapses onto the resident block (reviving it if it
//     was inactive) and frees the duplicate, so a recomputed block-aligned
//     tail costs no extra slot (P8: native 3 inactive, KVBM 2);
//   - eviction follows lineage: only leaves (blocks with no resident child)
//     are evicted, oldest insertion into the inactive pool first, and a
//     block that becomes a leaf again keeps its original position. A parent
//     is therefore never removed before its children, so Removed events
//     never orphan a block in a router's index, while native LRU may evict a
//     shared prefix whose suffixes are still resident.
//
// With lower tiers (SetOffload) an evicted block is handed to them and its
// slot stays quarantined until its copy ends (spec §5.4).
type LineagePool struct {
	accounting
	slots   []lslot
	byHash  *idmap.Map
	leaves  idHeap // evictable leaves by (tick, slot)
	tick    uint64
	offload func(hash uint64, slot int32) bool
	store   func(hash uint64, slot int32) // write-through: every newly stored block
}

type lslot struct {
	hash uint64
	holds
	parent   int32
	children int32 // resident registered children
	tick     uint64
	state    slotState
}

// NewLineagePool returns a pool of capacity slots, allocated on first use
// like the native pool's.
func NewLineagePool(capacity int) *LineagePool {
	return &LineagePool{accounting: newAccounting(capacity), byHash: new(idmap.Map)}
}

// Lookup implements BlockPool.
func (p *LineagePool) Lookup(hash uint64) (int32, bool) {
	return p.byHash.Get(hash)
}

// MatchPrefix implements BlockPool.
func (p *LineagePool) MatchPrefix(hashes []uint64) (overlap, active int) {
	for _, h := range hashes {
		c, ok := p.byHash.Get(h)
		if !ok {
			break
		}
		overlap++
		if p.slots[c].held() {
			active++
		}
	}
	return overlap, active
}

func (p *LineagePool) isInactive(c int32) bool {
	s := &p.slots[c]
	return s.state == slotCached && s.refs == 0 && s.pins == 0
}

// Offloader is a block pool that can hand its evicted blocks to lower
// tiers: the lineage pool implements it, and kv/tiers' Layer attaches to
// any pool that does, so the tiers need no knowledge of the pool's type.
type Offloader interface {
	// SetOffload hands every evicted block to offload, which reports
	// whether the slot must stay quarantined until its copy ends.
	SetOffload(offload func(hash uint64, slot int32) bool)
	// Unquarantine frees a slot whose offload copy has ended.
	Unquarantine(slot int32)
	// SetStore hands every newly stored (registered) block to store: the
	// write-through host offload of kv/tiers (offload: on_store).
	SetStore(store func(hash uint64, slot int32))
}

var _ Offloader = (*LineagePool)(nil)

// SetOffload hands every evicted block to offload, which reports whether
// the slot must stay quarantined until its copy ends (Unquarantine).
func (p *LineagePool) SetOffload(offload func(hash uint64, slot int32) bool) { p.offload = offload }

// SetStore hands every newly stored block to store (Offloader).
func (p *LineagePool) SetStore(store func(hash uint64, slot int32)) { p.store = store }

// Unquarantine frees a slot whose offload copy has ended.
func (p *LineagePool) Unquarantine(c int32) {
	p.quarantined--
	p.slots[c] = lslot{}
	p.recycle(c)
}

// Reserve implements BlockPool. Every inactive block not being pinned is
// evictable: ancestors of held blocks are held too (a lease holds its whole
// prefix), so evicting leaves one by one reaches all of them. Quarantined
// slots count as room on its way: when they cover the shortfall, Reserve
// evicts what else it needs and fails with Blocked set, and the caller
// waits for the copies.
func (p *LineagePool) Reserve(prefix []int32, fresh int) bool {
	p.blocked = false
	if fresh > p.Free() {
		evictable := p.inactive
		for _, c := range prefix {
			if p.isInactive(c) {
				evictable--
			}
		}
		if fresh > p.Free()+p.quarantined+evictable {
			return false
		}
	}
	for _, c := range prefix {
		if p.isInactive(c) {
			p.revive(c)
		}
		p.slots[c].pins++
	}
	for fresh > p.Free()+p.quarantined {
		p.evict(p.leaves.min())
	}
	if fresh > p.Free() {
		p.Cancel(prefix, 0)
		p.blocked = true
		return false
	}
	p.reserved += fresh
	return true
}

// Cancel implements BlockPool.
func (p *LineagePool) Cancel(prefix []int32, unused int) {
	for i := len(prefix) - 1; i >= 0; i-- {
		if c := prefix[i]; p.slots[c].unpin() {
			p.retire(c)
		}
	}
	p.reserved -= unused
}

// Acquire implements BlockPool.
func (p *LineagePool) Acquire(c int32) { p.slots[c].acquire() }

// AllocatePrivate implements BlockPool.
func (p *LineagePool) AllocatePrivate() int32 {
	c, fresh := p.take()
	s := lslot{state: slotPrivate, holds: holds{refs: 1}, parent: -1}
	if fresh {
		p.slots = append(grown(p.slots, p.capacity), s) // c == len(p.slots): slots are used in id order
	} else {
		p.slots[c] = s
	}
	return c
}

// Register implements BlockPool.
func (p *LineagePool) Register(c int32, hash uint64, parent int32) (int32, bool) {
	if e, found := p.byHash.GetOrPut(hash, c); found {
		// Collapse onto the resident block; the duplicate slot is freed.
		p.slots[c].state = slotFree
		p.recycle(c)
		if p.isInactive(e) {
			p.revive(e)
		}
		p.slots[e].refs++
		return e, false
	}
	s := &p.slots[c]
	s.state, s.hash, s.parent = slotCached, hash, parent
	if parent >= 0 {
		ps := &p.slots[parent]
		ps.children++
		p.leaves.remove(parent)
	}
	if p.store != nil {
		p.store(hash, c)
	}
	return c, true
}

// Release implements BlockPool.
func (p *LineagePool) Release(c int32) {
	s := &p.slots[c]
	if s.state == slotPrivate {
		s.state = slotFree
		p.recycle(c)
		return
	}
	if s.drop() {
		p.retire(c)
	}
}

// retire moves a block into the inactive pool, stamping its insertion tick.
func (p *LineagePool) retire(c int32) {
	p.inactive++
	p.tick++
	s := &p.slots[c]
	s.tick = p.tick
	if s.children == 0 {
		p.leaves.push(c, s.tick, uint64(c))
	}
}

// revive takes an inactive block back into use.
func (p *LineagePool) revive(c int32) {
	p.inactive--
	p.leaves.remove(c)
}

func (p *LineagePool) evict(c int32) {
	p.leaves.remove(c)
	p.inactive--
	s := &p.slots[c]
	p.byHash.Delete(s.hash)
	p.removed(s.hash)
	if par := s.parent; par >= 0 {
		ps := &p.slots[par]
		ps.children--
		if ps.children == 0 && p.isInactive(par) {
			p.leaves.push(par, ps.tick, uint64(par)) // a leaf again, at its original tick
		}
	}
	h := s.hash
	*s = lslot{}
	if p.offload != nil && p.offload(h, c) {
		s.state = slotQuarantined
		p.quarantined++
		return
	}
	p.recycle(c)
}
