package router

// blockTable maps block hashes to non-zero int32 values: the indexer's
// remembered hashes' nodes (see rankSet) and the active tree's segment
// starts (activetree.go). It replaces idmap.Map there so that one probe
// serves a read-modify-write.
//
// It is open addressing with linear probing and backward-shift deletion
// (Knuth, TAOCP vol. 3, §6.4, Algorithm R): a delete leaves no tombstone,
// so probes stay short under the churn of blocks stored and evicted (Go's
// map, which counted active blocks before, filled with tombstones under
// that churn: 1.3 s of a 7.5 s profile in one decrement line). Nothing
// iterates it, so no result depends on its order.
type blockTable struct {
	slots []blockEntry
	n     int  // entries
	shift uint // 64 - log2(len(slots))
}

// blockEntry is one hash's slot; ix == 0 marks an empty slot.
type blockEntry struct {
	key uint64
	ix  int32
}

// home is the key's first slot (Fibonacci hashing).
func (t *blockTable) home(key uint64) int {
	return int((key * 0x9E3779B97F4A7C15) >> t.shift)
}

// find is key's slot, or -1.
func (t *blockTable) find(key uint64) int {
	if t.n == 0 {
		return -1
	}
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		e := &t.slots[i]
		if e.ix == 0 {
			return -1
		}
		if e.key == key {
			return i
		}
	}
}

// claim is key's slot, a new empty one if key has none: the caller makes
// it non-empty before any other call.
func (t *blockTable) claim(key uint64) int {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		e := &t.slots[i]
		if e.ix == 0 {
			e.key = key
			t.n++
			return i
		}
		if e.key == key {
			return i
		}
	}
}

// ixOf is key's index value (0: not indexed).
func (t *blockTable) ixOf(key uint64) int32 {
	if i := t.find(key); i >= 0 {
		return t.slots[i].ix
	}
	return 0
}

// setIx sets key's index value; 0 takes key out.
func (t *blockTable) setIx(key uint64, v int32) {
	if v != 0 {
		t.slots[t.claim(key)].ix = v
	} else if i := t.find(key); i >= 0 {
		t.slots[i].ix = 0
		t.drop(i)
	}
}

// drop closes the hole at slot i (emptied by the caller): backward shift,
// moving each later entry of the run into the hole unless its home lies
// cyclically in (hole, j].
func (t *blockTable) drop(i int) {
	mask := len(t.slots) - 1
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		e := t.slots[j]
		if e.ix == 0 {
			break
		}
		if h := t.home(e.key); (j-h)&mask >= (j-i)&mask {
			t.slots[i] = e
			i = j
		}
	}
	t.slots[i] = blockEntry{}
	t.n--
}

// grow doubles the table (8 slots at first), keeping the load ≤ 1/2.
func (t *blockTable) grow() {
	size, shift := 8, uint(61)
	if len(t.slots) > 0 {
		size, shift = 2*len(t.slots), t.shift-1
	}
	old := t.slots
	t.slots, t.shift = make([]blockEntry, size), shift
	mask := size - 1
	for _, e := range old {
		if e.ix == 0 {
			continue
		}
		i := t.home(e.key)
		for t.slots[i].ix != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = e
	}
}
