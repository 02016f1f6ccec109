package tiers

import "testing"

// FuzzIndex checks the index against a map under inserts and deletes of
// slot-keyed hashes, including colliding fingerprints and growth.
func FuzzIndex(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0x81, 4, 0x82, 5, 6, 7, 8, 9, 0x83, 0x84, 0x85})
	f.Add([]byte{0, 0, 0, 0x80, 0x80, 1, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var x index
		var slots []pslot
		ref := map[uint64]int32{}
		for _, op := range ops {
			// Keys from a small space, spread so fingerprints and homes
			// collide now and then.
			key := uint64(op&0x3f) * 0x100000001
			if op&0x80 == 0 {
				s := int32(len(slots))
				got, found := x.getOrPut(key, s, slots)
				if want, ok := ref[key]; ok != found || ok && got != want {
					t.Fatalf("getOrPut(%x) = %d, %v; want %d, %v", key, got, found, want, ok)
				}
				if !found {
					slots = append(slots, pslot{hash: key})
					ref[key] = s
				}
			} else if s, ok := ref[key]; ok {
				x.del(key, s)
				delete(ref, key)
				slots[s].hash = ^key // the slot is free; its old hash must not match
			}
			if x.n != len(ref) {
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
