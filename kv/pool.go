package kv

import "github.com/dynosim/dynosim-web/internal/idmap"

// Pool is the native physical block pool (spec §4.3): capacity slots, each
// free, private (owned by one request, not findable) or cached (findable by
// sequence hash, with reference and pin counts). A cached copy nobody
// references or pins is inactive and sits in an LRU list; evictions take the
// LRU head. Several copies may carry one hash (two requests computing the
// same tail at once); the first is the primary used for lookups and a hash is
// removed only when its last copy goes.
//
// All operations are O(1) except eviction, which is O(evicted), and lookups
// of duplicate copies, which walk the (short) copy chain.
type Pool struct {
	accounting
	slots   []slot
	head    int32 // LRU head (oldest inactive), -1 if empty
	tail    int32
	primary *idmap.Map // hash → first copy
}

type slotState uint8

const (
	slotFree slotState = iota
	slotPrivate
	slotCached
	slotQuarantined // evicted, its copy to a lower tier in flight (lineage pool)
)

type slot struct {
	hash uint64
	holds
	prev, next int32 // LRU links
	nextCopy   int32 // next copy of the same hash
	state      slotState
	inLRU      bool
	primary    bool // the copy Lookup finds (kept so eviction needs no lookup to know)
}

// NewPool returns a pool of capacity slots. Nothing is allocated per slot
// until a run uses it: the slot table and the hash index grow with use.
func NewPool(capacity int) *Pool {
	return &Pool{
		accounting: newAccounting(capacity),
		head:       -1,
		tail:       -1,
		primary:    new(idmap.Map),
	}
}

// Lookup returns the primary copy of hash.
func (p *Pool) Lookup(hash uint64) (copy int32, ok bool) {
	return p.primary.Get(hash)
}

// IsActive reports whether a copy is referenced or pinned.
func (p *Pool) IsActive(copy int32) bool { return p.slots[copy].held() }

// MatchPrefix walks hashes from the first block and returns how many leading
// blocks are resident and how many of those are active.
func (p *Pool) MatchPrefix(hashes []uint64) (overlap, active int) {
	for _, h := range hashes {
		c, ok := p.primary.Get(h)
		if !ok {
			break
		}
		overlap++
		if p.IsActive(c) {
			active++
		}
	}
	return overlap, active
}

// Reserve atomically pins the given resident prefix copies and reserves fresh
// new slots, evicting inactive copies (never the pinned ones) from the LRU
// head as needed. It fails without side effects when there is not enough
// room.
func (p *Pool) Reserve(prefix []int32, fresh int) bool {
	if fresh > p.Free() {
		evictable := p.inactive
		for _, c := range prefix {
			if s := &p.slots[c]; s.inLRU {
				evictable--
			}
		}
		if fresh > p.Free()+evictable {
			return false
		}
	}
	for _, c := range prefix {
		s := &p.slots[c]
		if s.inLRU {
			p.unlink(c)
		}
		s.pins++
	}
	for fresh > p.Free() {
		p.evict(p.head)
	}
	p.reserved += fresh
	return true
}

// Cancel undoes a reservation: unpins the prefix copies in reverse order (so
// leaves become older LRU entries than their parents) and returns unused
// reserved slots.
func (p *Pool) Cancel(prefix []int32, unused int) {
	for i := len(prefix) - 1; i >= 0; i-- {
		if c := prefix[i]; p.slots[c].unpin() {
			p.pushTail(c)
		}
	}
	p.reserved -= unused
}

// Acquire turns a pin taken by Reserve into a reference.
func (p *Pool) Acquire(copy int32) { p.slots[copy].acquire() }

// AllocatePrivate consumes one reserved slot as a private copy.
func (p *Pool) AllocatePrivate() int32 {
	c, fresh := p.take()
	s := slot{state: slotPrivate, holds: holds{refs: 1}, prev: -1, next: -1, nextCopy: -1}
	if fresh {
		p.slots = append(grown(p.slots, p.capacity), s) // c == len(p.slots): slots are used in id order
	} else {
		p.slots[c] = s
	}
	return c
}

// CachePrivate makes a private copy findable under hash, with one reference.
// It reports whether this is the first copy of the hash, i.e. whether the
// hash just became visible to routers.
func (p *Pool) CachePrivate(copy int32, hash uint64) (first bool) {
	s := &p.slots[copy]
	s.state = slotCached
	s.hash = hash
	s.nextCopy = -1
	c, found := p.primary.GetOrPut(hash, copy)
	if !found {
		s.primary = true
		return true
	}
	for p.slots[c].nextCopy >= 0 {
		c = p.slots[c].nextCopy
	}
	p.slots[c].nextCopy = copy
	return false
}

// Release drops one reference. A private copy is freed at once; a cached copy
// with no references or pins left goes to the LRU tail.
func (p *Pool) Release(copy int32) {
	s := &p.slots[copy]
	if s.state == slotPrivate {
		s.state = slotFree
		p.recycle(copy)
		return
	}
	if s.drop() {
		p.pushTail(copy)
	}
}

func (p *Pool) pushTail(c int32) {
	s := &p.slots[c]
	s.prev, s.next, s.inLRU = p.tail, -1, true
	if p.tail >= 0 {
		p.slots[p.tail].next = c
	} else {
		p.head = c
	}
	p.tail = c
	p.inactive++
}

func (p *Pool) unlink(c int32) {
	s := &p.slots[c]
	if s.prev >= 0 {
		p.slots[s.prev].next = s.next
	} else {
		p.head = s.next
	}
	if s.next >= 0 {
		p.slots[s.next].prev = s.prev
	} else {
		p.tail = s.prev
	}
	s.prev, s.next, s.inLRU = -1, -1, false
	p.inactive--
}

// evict frees an inactive cached copy.
func (p *Pool) evict(c int32) {
	p.unlink(c)
	s := &p.slots[c]
	h := s.hash
	switch {
	case s.primary && s.nextCopy >= 0:
		p.primary.Put(h, s.nextCopy)
		p.slots[s.nextCopy].primary = true
	case s.primary:
		p.primary.Delete(h)
		p.removed(h)
	default:
		first, _ := p.primary.Get(h)
		for q := first; q >= 0; q = p.slots[q].nextCopy {
			if p.slots[q].nextCopy == c {
				p.slots[q].nextCopy = s.nextCopy
				break
			}
		}
	}
	s.state = slotFree
	p.recycle(c)
}
