package tiers

// index maps block hashes to pool slots for a lower tier. A tier's table is
// large and cold (every offloaded block probes G2's and G3's once to place
// itself and once to drop its victim), so entries are 8 bytes, half of
// internal/idmap's: the high 32 bits of the hash's Fibonacci product, which
// also give its home bucket, and the slot + 1. A fingerprint match is
// confirmed against the full hash the pool keeps in the slot. Linear
// probing, at most half full, deletion by backward shift (no tombstones),
// never iterated.
//
// A large table drops an evicted victim's entry lazily (stale): reading
// the victim's cold bucket was the costliest miss of a full tier's insert.
// The entry stays, pointing at the slot the new block took over, so the
// full-hash check rejects it; stale entries are counted in n and dropped
// when the table is rebuilt from the pool's slots (grow), each held slot
// indexed once.
type index struct {
	t     []uint64
	n     int    // entries, stale ones included
	stale int    // entries of evicted blocks not dropped yet
	shift uint   // 32 - log2(len(t)): home = fingerprint >> shift
	sink  uint64 // what warm loads, so the load stays
	buf   []uint64
	count []int32
}

// lazyMin is the table length from which evictions drop entries lazily.
// A worker's G2 (4,000 blocks: 16,384 buckets) gains too: its table is
// not in cache either by the next flush (CPU medians, tiers benchmark).
var lazyMin = 1 << 13

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
			if s := int32(uint32(e)) - 1; slots[s].hash == key && slots[s].state != pfree {
				return s, true
			}
		}
	}
}

// getOrPut returns key's slot if it is there; otherwise it stores slot
// under key (that slot's hash may still be another block's).
func (x *index) getOrPut(key uint64, slot int32, slots []pslot) (int32, bool) {
	if 2*(x.n+1) > len(x.t) {
		x.grow(slots)
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
			if s := int32(uint32(e)) - 1; slots[s].hash == key && slots[s].state != pfree {
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

// lazy reports whether evict drops entries lazily.
func (x *index) lazy() bool { return len(x.t) >= lazyMin }

// evict drops the entry of key, whose slot a new block has just taken
// over (getOrPut stored it): lazily in a large table, else at once.
func (x *index) evict(key uint64, slot int32) {
	if x.lazy() {
		x.stale++
		return
	}
	x.del(key, slot)
}

// del removes slot's entry; key is the hash it was stored under. The
// entry matches in fingerprint and slot: a stale entry may name the slot.
func (x *index) del(key uint64, slot int32) {
	fp := fingerprint(key)
	want := fp<<32 | uint64(uint32(slot+1))
	mask := len(x.t) - 1
	i := x.home(fp)
	for ; ; i = (i + 1) & mask {
		e := x.t[i]
		if e == 0 {
			return
		}
		if e == want {
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

// grow at least doubles the table (from 8 buckets), or with stale entries
// rebuilds it from slots (every held slot's hash) at a size where the live
// entries fill at most a quarter, so rebuilds stay rare.
func (x *index) grow(slots []pslot) {
	if x.stale > 0 {
		x.rebuild(slots)
		return
	}
	size, shift := 8, uint(32-3)
	for size < 2*(x.n+1) || size <= len(x.t) {
		size *= 2
		shift--
	}
	old := x.t
	x.t, x.shift = make([]uint64, size), shift
	for _, e := range old {
		if e != 0 {
			x.place(e)
		}
	}
}

func (x *index) place(e uint64) {
	mask := len(x.t) - 1
	i := x.home(e >> 32)
	for x.t[i] != 0 {
		i = (i + 1) & mask
	}
	x.t[i] = e
}

// rebuild indexes every held slot afresh, in place unless it must grow.
// Placing the entries in slot order wrote all over a table larger than the
// cache (a cold miss each: G3's rebuilds were an eighth of the tiers'
// CPU); grouped first by the region of the table their home lies in
// (regionBits of buckets, a counting sort over the slots), each region's
// probes stay in a few cache lines. Where an entry lands within its
// cluster does not matter: a hash has one live entry.
func (x *index) rebuild(slots []pslot) {
	live := x.n - x.stale
	size, shift := len(x.t), x.shift
	for size < 4*(live+1) {
		size *= 2
		shift--
	}
	if size == len(x.t) {
		clear(x.t)
	} else {
		x.t = make([]uint64, size)
	}
	x.shift, x.n, x.stale = shift, 0, 0
	if size <= smallTable {
		for s := range slots {
			if sl := &slots[s]; sl.state != pfree {
				x.place(fingerprint(sl.hash)<<32 | uint64(uint32(s+1)))
				x.n++
			}
		}
		return
	}
	rshift := min(shift+regionBits, 32) // one region if the table is smaller
	regions := 1 << (32 - rshift)
	if cap(x.count) < regions+1 {
		x.count = make([]int32, regions+1)
	}
	count := x.count[:regions+1]
	clear(count)
	for s := range slots {
		if sl := &slots[s]; sl.state != pfree {
			count[fingerprint(sl.hash)>>rshift+1]++
		}
	}
	for r := 1; r <= regions; r++ {
		count[r] += count[r-1]
	}
	n := int(count[regions])
	if cap(x.buf) < n {
		x.buf = make([]uint64, n)
	}
	buf := x.buf[:n]
	for s := range slots {
		if sl := &slots[s]; sl.state != pfree {
			fp := fingerprint(sl.hash)
			r := fp >> rshift
			buf[count[r]] = fp<<32 | uint64(uint32(s+1))
			count[r]++
		}
	}
	for _, e := range buf {
		x.place(e)
	}
	x.n = n
}

// regionBits is log2 of the buckets in a rebuild's region: 512 buckets,
// 4 KiB, stay in L1 while their entries are placed. A table of at most
// smallTable buckets (512 KiB, a worker's G2: rebuilt every few thousand
// inserts) stays in L2 anyway: sorting it first only added work.
var (
	regionBits = uint(9) // variables for FuzzIndex
	smallTable = 1 << 16
)
