package idmap

// Set is a set of uint64 keys: Map's table without values, 8 bytes a slot
// instead of 16, filled to at most three quarters instead of half. It is
// for a large set probed at random, where a probe is a cache miss and the
// table's size decides how many: the KV router's index of the blocks each
// worker's KV events stored holds one key per cached block of every worker
// (38 k per worker at the issue 34 item 2 benchmark), so as a Map it took
// 2 MiB a worker, as a Set 512 KiB.
//
// Linear probing at that load still reads about one cache line a probe
// (8 slots): at three quarters full a hit reads 2.5 slots and a miss 8.5
// on average (Knuth, TAOCP vol. 3, §6.4), fewer below. Deletion shifts the
// following keys back (no tombstones), as in Map.
// Key 0 marks an empty slot, so the key 0 itself is a flag beside the
// table. The zero Set is empty and ready to use.
type Set struct {
	slots []uint64
	n     int  // keys in slots
	zero  bool // key 0 is in the set
	shift uint // 64 - log2(len(slots))
}

// Len is the number of keys.
func (s *Set) Len() int {
	if s.zero {
		return s.n + 1
	}
	return s.n
}

// home is key's preferred slot (Fibonacci hashing, as Map).
func (s *Set) home(key uint64) int {
	return int((key * 0x9E3779B97F4A7C15) >> s.shift)
}

// Has reports whether key is in the set.
func (s *Set) Has(key uint64) bool {
	if key == 0 {
		return s.zero
	}
	if s.n == 0 {
		return false
	}
	mask := len(s.slots) - 1
	for i := s.home(key); ; i = (i + 1) & mask {
		switch s.slots[i] {
		case key:
			return true
		case 0:
			return false
		}
	}
}

// Peek reads key's home slot and returns it, for a caller about to add or
// remove a batch of keys: peeking at them all first lets the CPU overlap
// their cache misses (the loads are independent) where the Adds or Removes
// would take them one after another (each probe branches on what it
// read). The caller keeps the values (XORs them into a field) so that the
// compiler keeps the loads.
func (s *Set) Peek(key uint64) uint64 {
	if len(s.slots) == 0 {
		return 0
	}
	return s.slots[s.home(key)]
}

// Add puts key in the set and reports whether it was not there.
func (s *Set) Add(key uint64) bool {
	if key == 0 {
		added := !s.zero
		s.zero = true
		return added
	}
	if 4*(s.n+1) > 3*len(s.slots) {
		s.grow()
	}
	mask := len(s.slots) - 1
	for i := s.home(key); ; i = (i + 1) & mask {
		switch s.slots[i] {
		case key:
			return false
		case 0:
			s.slots[i] = key
			s.n++
			return true
		}
	}
}

// Remove takes key out of the set and reports whether it was there.
func (s *Set) Remove(key uint64) bool {
	if key == 0 {
		removed := s.zero
		s.zero = false
		return removed
	}
	if s.n == 0 {
		return false
	}
	mask := len(s.slots) - 1
	i := s.home(key)
	for ; s.slots[i] != key; i = (i + 1) & mask {
		if s.slots[i] == 0 {
			return false
		}
	}
	// Backward shift, as Map.Delete: a later key of the run moves into the
	// hole when the hole lies on its probe path (cyclically in [home, j)).
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		k := s.slots[j]
		if k == 0 {
			break
		}
		if h := s.home(k); (j-h)&mask >= (j-i)&mask {
			s.slots[i] = k
			i = j
		}
	}
	s.slots[i] = 0
	s.n--
	return true
}

// grow doubles the table (8 slots at first).
func (s *Set) grow() {
	size, shift := minSlots, uint(61) // 64 - log2(8)
	if len(s.slots) > 0 {
		size, shift = 2*len(s.slots), s.shift-1
	}
	old := s.slots
	s.slots, s.shift = make([]uint64, size), shift
	mask := size - 1
	for _, k := range old {
		if k == 0 {
			continue
		}
		i := s.home(k)
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = k
	}
}
