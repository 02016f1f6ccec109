package kv

// Manager is the G1 manager the vLLM-shaped engines use: the native pool plus
// the request-lease rules (prefix reuse on first allocation, finalization of
// computed blocks, tail-first release) and router-visible KV events.
type Manager struct {
	Pool      BlockPool
	BlockSize int
	Caching   bool      // prefix caching; off means every block stays private
	Events    *EventLog // nil: publish nothing (nothing reads them)

	scratch []int32
	removed []uint64
}

// NewManager returns a manager over a fresh native pool of blocks slots.
func NewManager(blocks, blockSize int, caching bool, events *EventLog) *Manager {
	return NewManagerWith(NewPool(blocks), blockSize, caching, events)
}

// NewManagerWith returns a manager over pool (native or lineage).
func NewManagerWith(pool BlockPool, blockSize int, caching bool, events *EventLog) *Manager {
	m := &Manager{Pool: pool, BlockSize: blockSize, Caching: caching, Events: events}
	if caching && events != nil {
		m.Pool.SetOnRemove(func(h uint64) { m.removed = append(m.removed, h) })
	}
	return m
}

// Lease is the set of blocks one request holds, in block order. The first
// `finalized` blocks are cached (findable); the rest are private.
type Lease struct {
	Slots     []int32
	finalized int
	claim     int // slots claimed by a blocked Allocate, given back on the next
}

// Match returns the resident and active prefix lengths, in blocks, of a
// request whose full blocks have the given sequence hashes.
func (m *Manager) Match(seq []uint64) (overlap, active int) {
	if !m.Caching {
		return 0, 0
	}
	return m.Pool.MatchPrefix(seq)
}

// Allocate grows the lease to cover tokens tokens. While the lease holds
// only cached blocks (on its first allocation, or after an onboarding),
// the leading prefixBlocks blocks reuse resident copies of seq.
// It is all-or-nothing and reports false when the pool cannot make room.
func (m *Manager) Allocate(l *Lease, tokens, prefixBlocks int, seq []uint64) bool {
	m.unclaim(l)
	target := (tokens + m.BlockSize - 1) / m.BlockSize
	have := len(l.Slots)
	if target <= have {
		return true
	}
	prefix := m.scratch[:0]
	if have == l.finalized && have < prefixBlocks && m.Caching {
		// A lease of cached blocks only (none yet, or a prefix onboarded
		// from a lower tier) extends along the resident copies.
		for _, h := range seq[have:min(prefixBlocks, target)] {
			c, ok := m.Pool.Lookup(h)
			if !ok {
				break
			}
			prefix = append(prefix, c)
		}
	}
	m.scratch = prefix
	fresh := target - have - len(prefix)
	ok := m.Pool.Reserve(prefix, fresh)
	// Evictions happen even when a reservation ends up blocked.
	m.removed = m.Events.removed(m.removed) // empty unless events are on
	if !ok {
		if m.Pool.Blocked() {
			// The evicted room is this request's when its copies end:
			// others (a decode growing by a block) must not take it.
			l.claim = fresh
			m.Pool.Claim(fresh)
		}
		return false
	}
	for _, c := range prefix {
		m.Pool.Acquire(c)
		l.Slots = append(l.Slots, c)
	}
	l.finalized += len(prefix)
	for range fresh {
		l.Slots = append(l.Slots, m.Pool.AllocatePrivate())
	}
	return true
}

// Finalize makes every block that became fully computed when the request's
// computed tokens went from before to after findable by hash, emitting a
// Stored event for hashes that became visible (grouped per run).
func (m *Manager) Finalize(l *Lease, before, after int, seq, local []uint64) {
	if !m.Caching {
		return
	}
	from := max(before/m.BlockSize, l.finalized)
	to := after / m.BlockSize
	var ev *Event
	for i := from; i < to; i++ {
		parent := int32(-1)
		if i > 0 {
			parent = l.Slots[i-1]
		}
		var first bool
		l.Slots[i], first = m.Pool.Register(l.Slots[i], seq[i], parent)
		if m.Events == nil {
			continue
		}
		if !first {
			ev = nil // an already visible block breaks the group
			continue
		}
		ev = m.Events.stored(ev, seq, i, local[i])
	}
	if to > l.finalized {
		l.finalized = to
	}
}

// Release returns every block of the lease, last block first, so a finished
// request's suffix enters the LRU before its prefix and is evicted first.
func (m *Manager) Release(l *Lease) {
	m.unclaim(l)
	for i := len(l.Slots) - 1; i >= 0; i-- {
		m.Pool.Release(l.Slots[i])
	}
	l.Slots = l.Slots[:0]
	l.finalized = 0
}

// Room reports whether n fresh blocks are free now, for a caller that
// then allocates them to several leases. When they are not, it makes the
// room as Allocate would: evicting, and, when the evicted blocks are being
// copied to a lower tier, claiming them for l (a lease that holds no
// blocks) until its next Room.
func (m *Manager) Room(l *Lease, n int) bool {
	m.unclaim(l)
	if n <= m.Pool.Free() {
		return true
	}
	ok := m.Pool.Reserve(nil, n)
	m.removed = m.Events.removed(m.removed)
	if ok {
		m.Pool.Cancel(nil, n) // the room is made; the leases take it
		return true
	}
	if m.Pool.Blocked() {
		l.claim = n
		m.Pool.Claim(n)
	}
	return false
}

// Unclaim gives back l's claim: its request is no longer first in line.
func (m *Manager) Unclaim(l *Lease) { m.unclaim(l) }

func (m *Manager) unclaim(l *Lease) {
	if l.claim > 0 {
		m.Pool.Claim(-l.claim)
		l.claim = 0
	}
}

// Blocked reports whether the last failed Allocate is waiting for G1 slots
// whose copy to a lower tier is in flight (wait, do not preempt).
func (m *Manager) Blocked() bool { return m.Pool.Blocked() }

// CanGrow reports whether n fresh blocks could be allocated now, evicting
// inactive blocks if needed.
func (m *Manager) CanGrow(n int) bool {
	return n <= m.Pool.Free()+m.Pool.Inactive()+m.Pool.Quarantined()
}

// Truncate releases the lease's blocks beyond the first blocks, last first.
// Only never-finalized (private) tail blocks are expected here: it returns
// the unused part of a speculative reservation.
func (m *Manager) Truncate(l *Lease, blocks int) {
	for i := len(l.Slots) - 1; i >= blocks; i-- {
		m.Pool.Release(l.Slots[i])
	}
	if blocks < len(l.Slots) {
		l.Slots = l.Slots[:blocks]
		l.finalized = min(l.finalized, blocks)
	}
}
