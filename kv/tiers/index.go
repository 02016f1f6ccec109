package tiers

// index maps block hashes to pool slots for a lower tier. A tier's table is
// large and cold (every offloaded block probes G2's and G3's once to place
// itself and once to drop its victim), so entries are 8 bytes, half of
// internal/idmap's: the high 32 bits of the hash's Fibonacci product, which
// also give its home bucket, and the slot + 1. A fingerprint match is
// confirmed against the full hash the pool keeps in the slot. Linear
// probing, at most half full, deletion by backward shift (no tombstones),
// never iterated.
type index struct {
	t     []uint64
	n     int
	shift uint   // 32 - log2(len(t)): home = fingerprint >> shift
	sink  uint64 // what warm loads, so the load stays
}

func fingerprint(key uint64) uint64 { return (key * 0x9E3779B97F4A7C15) >> 32 }

func (x *index) home(fp uint64) int { return int(fp >> x.shift) }

// get returns key's slot; slots[s].hash is the full hash of each slot s
// the index holds.
func (x *index) get(key uint64, slots []pslot) (int32, bool) {
	if x.n == 0 {
		return 0, false
	}
	fp, mask := fingerprint(key), len(x.t)-1
	for i := x.home(fp); ; i = (i + 1) & mask {
		e := x.t[i]
		if e == 0 {
			return 0, false
		}
		if e>>32 == fp {
			if s := int32(uint32(e)) - 1; slots[s].hash == key {
				return s, true
			}
		}
	}
}

// getOrPut returns key's slot if it is there; otherwise it stores slot
// under key (that slot's hash may still be another block's).
func (x *index) getOrPut(key uint64, slot int32, slots []pslot) (int32, bool) {
	if 2*(x.n+1) > len(x.t) {
		x.grow()
	}
	fp, mask := fingerprint(key), len(x.t)-1
	for i := x.home(fp); ; i = (i + 1) & mask {
		e := x.t[i]
		if e == 0 {
			x.t[i] = fp<<32 | uint64(uint32(slot+1))
			x.n++
			return slot, false
		}
		if e>>32 == fp {
			if s := int32(uint32(e)) - 1; slots[s].hash == key {
				return s, true
			}
		}
	}
}

// warm loads key's home bucket ahead of its use, so that its cache miss
// overlaps another's (insert places one hash and drops another: two
// independent misses in a large table).
func (x *index) warm(key uint64) {
	if len(x.t) > 0 {
		x.sink ^= x.t[x.home(fingerprint(key))]
	}
}

// peek is warm for a batch: it returns key's home bucket for the caller
// to fold into one value and hand to sink once, so the batch's loads are
// not chained through sink in memory.
func (x *index) peek(key uint64) uint64 {
	if len(x.t) > 0 {
		return x.t[x.home(fingerprint(key))]
	}
	return 0
}

// del removes slot's entry; key is the hash it was stored under.
func (x *index) del(key uint64, slot int32) {
	want := uint64(uint32(slot + 1))
	mask := len(x.t) - 1
	i := x.home(fingerprint(key))
	for ; ; i = (i + 1) & mask {
		e := x.t[i]
		if e == 0 {
			return
		}
		if e&0xFFFFFFFF == want {
			break
		}
	}
	// Backward shift: move each later entry of the cluster into the hole
	// when the hole lies on its probe path (cyclically in [home, j)).
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		e := x.t[j]
		if e == 0 {
			break
		}
		if h := x.home(e >> 32); (j-h)&mask >= (j-i)&mask {
			x.t[i] = e
			i = j
		}
	}
	x.t[i] = 0
	x.n--
}

// grow at least doubles the table (from 8 buckets).
func (x *index) grow() {
	size, shift := 8, uint(32-3)
	for size < 2*(x.n+1) || size <= len(x.t) {
		size *= 2
		shift--
	}
	old := x.t
	x.t, x.shift = make([]uint64, size), shift
	mask := size - 1
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := x.home(e >> 32)
		for x.t[i] != 0 {
			i = (i + 1) & mask
		}
		x.t[i] = e
	}
}
