package idmap

import (
	"encoding/binary"
	"testing"
)

func TestMap(t *testing.T) {
	var m Map // the zero Map works
	if _, ok := m.Get(7); ok {
		t.Fatal("empty map has key 7")
	}
	m.Delete(7)
	for _, tc := range []struct {
		op       byte // p(ut), g(etOrPut), d(elete)
		key      uint64
		val      int32
		wantLen  int
		wantVals map[uint64]int32
	}{
		{'p', 0, 0, 1, map[uint64]int32{0: 0}},
		{'p', 1 << 63, 5, 2, map[uint64]int32{0: 0, 1 << 63: 5}},
		{'p', 0, 9, 2, map[uint64]int32{0: 9, 1 << 63: 5}},
		{'g', 0, 4, 2, map[uint64]int32{0: 9, 1 << 63: 5}},
		{'g', 12, 4, 3, map[uint64]int32{0: 9, 1 << 63: 5, 12: 4}},
		{'d', 12, 0, 2, map[uint64]int32{0: 9, 1 << 63: 5}},
		{'d', 3, 0, 2, map[uint64]int32{0: 9, 1 << 63: 5}},
		{'d', 0, 0, 1, map[uint64]int32{1 << 63: 5}},
		{'p', ^uint64(0), 1<<31 - 2, 2, map[uint64]int32{1 << 63: 5, ^uint64(0): 1<<31 - 2}},
	} {
		switch tc.op {
		case 'p':
			m.Put(tc.key, tc.val)
		case 'g':
			m.GetOrPut(tc.key, tc.val)
		case 'd':
			m.Delete(tc.key)
		}
		if m.Len() != tc.wantLen {
			t.Fatalf("after %c %d: Len %d, want %d", tc.op, tc.key, m.Len(), tc.wantLen)
		}
		for k, want := range tc.wantVals {
			if got, ok := m.Get(k); !ok || got != want {
				t.Fatalf("after %c %d: Get(%d) = %d, %v; want %d", tc.op, tc.key, k, got, ok, want)
			}
		}
	}
}

// Colliding keys (same home slot) exercise wrap-around and backward shift.
func TestClusterDelete(t *testing.T) {
	m := New(4) // 8 slots
	var keys []uint64
	for k := uint64(0); len(keys) < 4; k++ {
		if m.home(k) == 7 { // the last slot, so the cluster wraps to 0, 1, 2
			keys = append(keys, k)
		}
	}
	for i, k := range keys {
		m.Put(k, int32(i))
	}
	for d := range keys {
		m.Delete(keys[d])
		for i := d + 1; i < len(keys); i++ {
			if v, ok := m.Get(keys[i]); !ok || v != int32(i) {
				t.Fatalf("after deleting %d of %d keys: key %d lost", d+1, len(keys), i)
			}
		}
	}
	if m.Len() != 0 {
		t.Fatalf("Len %d after deleting all", m.Len())
	}
}

// FuzzMap checks the Map against a Go map under any sequence of operations:
// each 3 bytes of input is an op, a key (few distinct values, so keys
// collide and repeat) and a value.
func FuzzMap(f *testing.F) {
	f.Add([]byte{0, 1, 2, 1, 1, 0, 0, 2, 3})
	f.Add(binary.LittleEndian.AppendUint64(nil, 0x0102030405060708))
	f.Fuzz(func(t *testing.T, ops []byte) {
		var m Map
		ref := map[uint64]int32{}
		for len(ops) >= 3 {
			op, key, val := ops[0]%3, uint64(ops[1])<<56|uint64(ops[1]%7), int32(ops[2])
			ops = ops[3:]
			switch op {
			case 0:
				m.Put(key, val)
				ref[key] = val
			case 1:
				old, found := m.GetOrPut(key, val)
				if want, ok := ref[key]; ok != found || (ok && old != want) {
					t.Fatalf("GetOrPut(%#x) = %d, %v; want %d, %v", key, old, found, want, ok)
				}
				if !found {
					ref[key] = val
				}
			case 2:
				m.Delete(key)
				delete(ref, key)
			}
			if m.Len() != len(ref) {
				t.Fatalf("Len %d, want %d", m.Len(), len(ref))
			}
			for k, want := range ref {
				if got, ok := m.Get(k); !ok || got != want {
					t.Fatalf("Get(%#x) = %d, %v; want %d", k, got, ok, want)
				}
			}
		}
	})
}

func BenchmarkChurn(b *testing.B) {
	// A pool-like load: a fixed population of hashes, each step evicting
	// the oldest and inserting a new one.
	const live = 1 << 14
	m := New(live)
	key := func(i int) uint64 { return uint64(i) * 0xD6E8FEB86659FD93 }
	for i := range live {
		m.Put(key(i), int32(i))
	}
	b.ResetTimer()
	for i := range b.N {
		m.Delete(key(i))
		m.Put(key(i+live), int32(i))
		if _, ok := m.Get(key(i + live/2)); !ok {
			b.Fatal("lost a key")
		}
	}
}
