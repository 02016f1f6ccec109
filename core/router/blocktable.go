package router

// blockTable is everything the KV router knows of one (worker, DP rank)'s
// blocks, keyed by chained sequence hash: whether the indexer holds the
// hash (ix: node<<1 | stored, see rankSet) and how many of the router's
// active sequences on the rank hold it as a prompt block (cnt, the
// active-sequence tracker of spec §8.6). One table serves both because the
// router asks both questions of the same hashes in the same walk: a
// placement scores a rank by its indexed overlap and its active-block
// overlap, one probe per prompt block for both, and then counts the chosen
// rank's blocks as active, hitting the entries it just read (issue 34 item
// 2: two Go maps per rank cost 1.9× round robin's CPU).
//
// It is open addressing with linear probing and backward-shift deletion
// (Knuth, TAOCP vol. 3, §6.4, Algorithm R): a delete leaves no tombstone,
// so probes stay short under the churn of requests arriving and finishing
// (Go's map, which it replaces for the counts, fills with tombstones under
// that churn). Nothing iterates it, so no result depends on its order.
type blockTable struct {
	slots []blockEntry
	n     int  // occupied slots
	nIx   int  // entries with ix ≠ 0
	nCnt  int  // entries with cnt > 0
	shift uint // 64 - log2(len(slots))
}

// blockEntry is one hash's slot; ix == 0 && cnt == 0 marks an empty slot.
type blockEntry struct {
	key uint64
	ix  int32
	cnt int32
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
		if e.ix == 0 && e.cnt == 0 {
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
		if e.ix == 0 && e.cnt == 0 {
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

// setIx sets key's index value; 0 takes key out of the index.
func (t *blockTable) setIx(key uint64, v int32) {
	i := -1
	if v != 0 {
		i = t.claim(key)
	} else if i = t.find(key); i < 0 {
		return
	}
	e := &t.slots[i]
	switch {
	case e.ix == 0 && v != 0:
		t.nIx++
	case e.ix != 0 && v == 0:
		t.nIx--
	}
	e.ix = v
	t.drop(i)
}

// inc adds one active holder of key.
func (t *blockTable) inc(key uint64) {
	e := &t.slots[t.claim(key)]
	if e.cnt == 0 {
		t.nCnt++
	}
	e.cnt++
}

// dec removes one active holder of key; a key with none is ignored (the
// Go map it replaces dropped a count that fell to ≤ 0).
func (t *blockTable) dec(key uint64) {
	i := t.find(key)
	if i < 0 || t.slots[i].cnt == 0 {
		return
	}
	if t.slots[i].cnt--; t.slots[i].cnt == 0 {
		t.nCnt--
		t.drop(i)
	}
}

// drop empties slot i if it holds nothing: backward shift, moving each
// later entry of the run into the hole unless its home lies cyclically in
// (hole, j].
func (t *blockTable) drop(i int) {
	if e := &t.slots[i]; e.ix != 0 || e.cnt != 0 {
		return
	}
	mask := len(t.slots) - 1
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		e := t.slots[j]
		if e.ix == 0 && e.cnt == 0 {
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
		if e.ix == 0 && e.cnt == 0 {
			continue
		}
		i := t.home(e.key)
		for t.slots[i].ix != 0 || t.slots[i].cnt != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = e
	}
}

// runs is the leading run of hashes indexed (overlap) and the leading run
// held by active sequences (shared), in one walk that stops when both end.
func (t *blockTable) runs(hashes []uint64) (overlap, shared int) {
	for i, h := range hashes {
		j := t.find(h)
		if j < 0 {
			break
		}
		e := &t.slots[j]
		if overlap == i && e.ix != 0 {
			overlap++
		}
		if shared == i && e.cnt > 0 {
			shared++
		}
		if overlap <= i && shared <= i {
			break
		}
	}
	return overlap, shared
}
