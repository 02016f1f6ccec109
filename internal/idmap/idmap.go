// Package idmap is a hash table from uint64 keys (block hashes, trace hash
// ids) to int32 values (slot or token ids).
//
// It replaces Go maps on the replay's hottest path: a KV pool inserts and
// deletes a hash for every block it caches and evicts, and that churn fills a
// Go map with tombstones, so lookups probe long chains until the next
// rehash (a third of a whole-trace replay's CPU went to map probing). Here
// deletion shifts the following entries back instead (linear probing
// without tombstones), so probe chains stay as short as the load allows;
// keys are spread by one multiplication, with no per-process seed, and the
// table is never iterated, so nothing depends on its order.
package idmap

// Map is an open-addressing table with linear probing, at most half full.
// The zero Map is empty and ready to use.
type Map struct {
	slots []entry
	n     int
	shift uint // 64 - log2(len(slots))
}

type entry struct {
	key uint64
	val int32 // value + 1; 0 marks an empty slot
}

const minSlots = 8

// New returns a Map sized for n keys without growing.
func New(n int) *Map {
	m := &Map{}
	m.resize(n)
	return m
}

// Len is the number of keys.
func (m *Map) Len() int { return m.n }

// home is key's preferred slot: Fibonacci hashing, so that keys differing
// only in their high bits (or small consecutive keys) still spread out.
func (m *Map) home(key uint64) int {
	return int((key * 0x9E3779B97F4A7C15) >> m.shift)
}

// Get returns the value stored under key.
func (m *Map) Get(key uint64) (int32, bool) {
	if m.n == 0 {
		return 0, false
	}
	mask := len(m.slots) - 1
	for i := m.home(key); ; i = (i + 1) & mask {
		e := &m.slots[i]
		if e.val == 0 {
			return 0, false
		}
		if e.key == key {
			return e.val - 1, true
		}
	}
}

// Put stores val under key, replacing any previous value. val must be in
// [0, MaxInt32).
func (m *Map) Put(key uint64, val int32) {
	if e, found := m.probe(key, val); found {
		e.val = val + 1
	}
}

// GetOrPut returns the value stored under key, if any; otherwise it stores
// val there: one probe where a Get and a Put would take two. val must be in
// [0, MaxInt32).
func (m *Map) GetOrPut(key uint64, val int32) (old int32, found bool) {
	e, found := m.probe(key, val)
	return e.val - 1, found
}

// probe finds key's entry, or stores val under key in a new one.
func (m *Map) probe(key uint64, val int32) (e *entry, found bool) {
	if 2*(m.n+1) > len(m.slots) {
		m.resize(m.n + 1)
	}
	mask := len(m.slots) - 1
	for i := m.home(key); ; i = (i + 1) & mask {
		e := &m.slots[i]
		if e.val == 0 {
			*e = entry{key, val + 1}
			m.n++
			return e, false
		}
		if e.key == key {
			return e, true
		}
	}
}

// Delete removes key, if present.
func (m *Map) Delete(key uint64) {
	if m.n == 0 {
		return
	}
	mask := len(m.slots) - 1
	i := m.home(key)
	for ; ; i = (i + 1) & mask {
		e := &m.slots[i]
		if e.val == 0 {
			return
		}
		if e.key == key {
			break
		}
	}
	// Backward shift: move each later entry of the cluster into the hole
	// when the hole lies on its probe path (cyclically in [home, j)), so
	// every remaining key stays reachable without tombstones.
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		e := m.slots[j]
		if e.val == 0 {
			break
		}
		if h := m.home(e.key); (j-h)&mask >= (j-i)&mask {
			m.slots[i] = e
			i = j
		}
	}
	m.slots[i] = entry{}
	m.n--
}

// resize rebuilds the table with room for n keys at most half full.
func (m *Map) resize(n int) {
	size, shift := minSlots, uint(61) // 64 - log2(8)
	for size < 2*n {
		size *= 2
		shift--
	}
	old := m.slots
	m.slots, m.shift, m.n = make([]entry, size), shift, 0
	for _, e := range old {
		if e.val != 0 {
			m.Put(e.key, e.val-1)
		}
	}
}
