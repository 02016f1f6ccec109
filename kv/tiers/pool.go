package tiers

// pool is one lower tier's block set (kvbm-logical's BlockManager<G2/G3>,
// or G4's presence map when unbounded): blocks keyed by sequence hash, each
// incoming (a copy into it is in flight; its room is taken) or resident.
// Resident blocks nobody pins sit in an LRU order (lru.go) and are evicted
// oldest first when an incoming block needs room. Slots are allocated as blocks
// arrive, so a large capacity costs only what the run touches.
type pool struct {
	capacity int // 0: unbounded (G4)
	slots    []pslot
	free     []int32
	byHash   index
	order    lru
	used     int // incoming + resident
	peak     int
	total    *int // a sum of used over pools (G2 of every worker), or nil
	onEvict  func(hash uint64, slot int32)
}

type pslot struct {
	hash    uint64
	pins    int32
	state   pstate
	inLRU   bool
	writing bool // incoming by a write-through store (store.go)
}

type pstate uint8

const (
	pfree pstate = iota
	incoming
	resident
)

func newPool(capacity int) *pool { return &pool{capacity: capacity} }

// residentSlot returns hash's slot if it is resident.
func (p *pool) residentSlot(hash uint64) (int32, bool) {
	s, ok := p.byHash.get(hash, p.slots)
	return s, ok && p.slots[s].state == resident
}

// insert takes room for hash as an incoming block, evicting the least
// recently used unpinned resident block when full. If hash is already
// there it returns its slot and false; with no room, -1 and false. One
// probe finds or places the hash (the victim's slot is chosen first and
// evicted only if the hash was new): these tables are large and cold.
func (p *pool) insert(hash uint64) (int32, bool) {
	full := p.capacity > 0 && p.used >= p.capacity
	var s int32
	var victim uint64
	switch {
	case full && p.order.live == 0: // everything is pinned or incoming
		if old, ok := p.byHash.get(hash, p.slots); ok {
			return old, false
		}
		return -1, false
	case full:
		h, _ := p.order.head()
		s, victim = h.slot, h.hash
		if !p.byHash.lazy() {
			p.byHash.warm(victim) // the victim's entry, dropped below
		}
	case len(p.free) > 0:
		s = p.free[len(p.free)-1]
	default:
		s = int32(len(p.slots))
	}
	if old, found := p.byHash.getOrPut(hash, s, p.slots); found {
		return old, false
	}
	switch {
	case full:
		p.order.remove(p.order.lo) // the head: s's slot is not read
		p.byHash.evict(victim, s)
		p.used--
		if p.total != nil {
			*p.total--
		}
		if p.onEvict != nil {
			p.onEvict(victim, s)
		}
	case len(p.free) > 0:
		p.free = p.free[:len(p.free)-1]
	default:
		p.slots = append(p.slots, pslot{})
	}
	p.slots[s] = pslot{hash: hash, state: incoming}
	p.used++
	p.peak = max(p.peak, p.used)
	if p.total != nil {
		*p.total++
	}
	return s, true
}

// warmBatch loads the index entries of blocks' hashes, so a batch's cache
// misses overlap (write-through sends every stored block through G2 and
// G3, whose tables are large and cold). Loading the victims' entries the
// same way cost more than it saved (CPU medians, tiers benchmark).
func (p *pool) warmBatch(blocks []blk) {
	var acc uint64
	for _, b := range blocks {
		acc ^= p.byHash.peek(b.hash)
	}
	p.byHash.sink ^= acc
}

// warmSlots loads the slots blocks are copied into (dst), so a batch's
// cache misses overlap.
func (p *pool) warmSlots(blocks []blk) {
	var acc int32
	for _, b := range blocks {
		acc ^= p.slots[b.dst].pins
	}
	p.byHash.sink ^= uint64(acc)
}

// cancel gives back an incoming block's room.
func (p *pool) cancel(s int32) {
	p.byHash.del(p.slots[s].hash, s)
	p.release(s)
}

// land makes an incoming block resident.
func (p *pool) land(s int32) {
	sl := &p.slots[s]
	sl.state = resident
	if sl.pins == 0 {
		p.pushTail(s)
	}
}

// pin keeps a resident or incoming block from eviction (a copy reads it).
func (p *pool) pin(s int32) {
	if p.slots[s].inLRU {
		p.unlink(s)
	}
	p.slots[s].pins++
}

func (p *pool) unpin(s int32) {
	sl := &p.slots[s]
	sl.pins--
	if sl.pins == 0 && sl.state == resident {
		p.pushTail(s)
	}
}

// touch marks a resident block as just used.
func (p *pool) touch(s int32) {
	if p.slots[s].inLRU {
		p.unlink(s)
		p.pushTail(s)
	}
}

func (p *pool) evict(s int32) {
	p.unlink(s)
	h := p.slots[s].hash
	p.byHash.del(h, s)
	p.release(s)
	if p.onEvict != nil {
		p.onEvict(h, s)
	}
}

func (p *pool) release(s int32) {
	p.slots[s] = pslot{}
	p.free = append(p.free, s)
	p.used--
	if p.total != nil {
		*p.total--
	}
}

// pushTail appends s's block to the LRU order as the most recently used
// (the ring's push, here so that it inlines).
func (p *pool) pushTail(s int32) {
	o := &p.order
	if o.hi-o.lo == uint32(len(o.ring)) {
		o.compact()
	}
	if int(s) >= len(o.at) {
		o.at = append(o.at, make([]uint32, int(s)+1-len(o.at))...)
	}
	sl := &p.slots[s]
	sl.inLRU = true
	o.at[s] = o.hi
	o.ring[o.hi&o.mask] = lruEntry{hash: sl.hash, slot: s}
	o.hi++
	o.live++
}

func (p *pool) unlink(s int32) {
	sl := &p.slots[s]
	p.order.remove(p.order.at[s])
	sl.inLRU = false
}
