package tiers

// lru is a pool's eviction order: its resident blocks nobody pins, least
// recently used first. It is a ring of (hash, slot) entries in the order
// they were pushed; removing a block from the middle leaves a tombstone,
// which the head skips. A full G3 evicts its head on every insert: with a
// linked list through the slots, reading the victim's slot was a cold
// miss each time (the costliest line of the tiers' insert, profile of the
// tiers benchmark), whereas the ring is read in order and carries the
// victim's hash, and a slot is 16 bytes without its links (at keeps the
// positions apart: only pushes and removals touch them). The order is the
// linked list's exactly: a block's place is its latest push.
type lru struct {
	ring   []lruEntry // len a power of two
	mask   uint32     // len(ring) - 1
	lo, hi uint32     // the entries [lo, hi), positions modulo 2^32
	live   int        // non-tombstone entries
	at     []uint32   // slot → its entry's position while it has one
}

type lruEntry struct {
	hash uint64
	slot int32 // -1: a tombstone
}

// head returns the least recently used block, skipping tombstones; ok is
// false when the order is empty.
func (l *lru) head() (e lruEntry, ok bool) {
	if l.live == 0 {
		return lruEntry{}, false
	}
	for l.ring[l.lo&l.mask].slot < 0 {
		l.lo++
	}
	return l.ring[l.lo&l.mask], true
}

// remove drops the entry at pos (a tombstone, or the head moves past it).
func (l *lru) remove(pos uint32) {
	l.ring[pos&l.mask].slot = -1
	l.live--
	if pos == l.lo {
		l.lo++
	}
	if l.live == 0 {
		l.lo = l.hi
	}
}

// compact rewrites a full ring without its tombstones, doubling it when
// live entries would fill more than half of it, so at least half a ring
// of pushes comes before the next compaction. It renumbers the slots'
// positions.
func (l *lru) compact() {
	size := max(len(l.ring), 64)
	for 2*l.live > size {
		size *= 2
	}
	ring := make([]lruEntry, size)
	n := uint32(0)
	l.each(func(_ uint32, e lruEntry) {
		ring[n] = e
		l.at[e.slot] = n
		n++
	})
	l.ring, l.mask, l.lo, l.hi = ring, uint32(size-1), 0, n
}

// each calls f with the entries in order, least recently used first.
func (l *lru) each(f func(pos uint32, e lruEntry)) {
	if len(l.ring) == 0 {
		return
	}
	for p := l.lo; p != l.hi; p++ {
		if e := l.ring[p&l.mask]; e.slot >= 0 {
			f(p, e)
		}
	}
}
