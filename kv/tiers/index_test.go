package tiers

import "testing"

// FuzzIndex checks the index against a map under inserts, deletes and
// evictions (a new key taking over a held key's slot, dropped lazily once
// the table is large) of slot-keyed hashes, including colliding
// fingerprints, growth and rebuilds.
func FuzzIndex(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0x81, 4, 0x82, 5, 6, 7, 8, 9, 0x83, 0x84, 0x85})
	f.Add([]byte{0, 0, 0, 0x80, 0x80, 1, 1})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f, 0x50, 0x51, 0x52, 9, 0x83})
	defer func(n, m int, r uint) { lazyMin, smallTable, regionBits = n, m, r }(lazyMin, smallTable, regionBits)
	lazyMin, regionBits = 16, 2
	f.Fuzz(func(t *testing.T, ops []byte) {
		// Rebuilds sort by regions of 4 buckets: in odd runs from 16
		// buckets, in even ones from 128.
		smallTable = 8 << (len(ops) % 2 * 3)
		var x index
		var slots []pslot
		ref := map[uint64]int32{}
		for _, op := range ops {
			// Keys from a small space, spread so fingerprints and homes
			// collide now and then.
			key := uint64(op&0x3f) * 0x100000001
			switch {
			case op&0xc0 == 0x40 && len(ref) > 0: // evict the key of slot key%len into a new key
				s := int32(int(key) % len(slots))
				old := slots[s].hash
				if _, held := ref[old]; !held || slots[s].state == pfree {
					break
				}
				key ^= 0x40 * 0x100000001 // keys the other ops never use
				if _, ok := ref[key]; ok {
					break
				}
				if got, found := x.getOrPut(key, s, slots); found {
					t.Fatalf("getOrPut(%x) found %d", key, got)
				}
				x.evict(old, s)
				delete(ref, old)
				slots[s].hash, ref[key] = key, s
			case op&0x80 == 0:
				s := int32(len(slots))
				got, found := x.getOrPut(key, s, slots)
				if want, ok := ref[key]; ok != found || ok && got != want {
					t.Fatalf("getOrPut(%x) = %d, %v; want %d, %v", key, got, found, want, ok)
				}
				if !found {
					slots = append(slots, pslot{hash: key, state: incoming})
					ref[key] = s
				}
			default:
				if s, ok := ref[key]; ok {
					x.del(key, s)
					delete(ref, key)
					slots[s] = pslot{hash: ^key} // free; its old hash must not match
				}
			}
			if x.n-x.stale != len(ref) {
				t.Fatalf("index holds %d keys, want %d", x.n, len(ref))
			}
			for k, s := range ref {
				if got, ok := x.get(k, slots); !ok || got != s {
					t.Fatalf("get(%x) = %d, %v; want %d", k, got, ok, s)
				}
			}
		}
	})
}
