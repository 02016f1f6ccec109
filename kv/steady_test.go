package kv

import (
	"reflect"
	"testing"
)

// TestItem34_1Quiet: when Quiet says so, Allocate and Finalize of one more
// token leave the lease and the pool as they were.
func TestItem34_1Quiet(t *testing.T) {
	for _, caching := range []bool{false, true} {
		m := NewManagerWith(NewPool(64), 4, caching, nil)
		var l Lease
		var seq, local []uint64
		for i := range 16 {
			seq, local = append(seq, uint64(100+i)), append(local, uint64(200+i))
		}
		quiet := 0
		for before := 0; before < 40; before++ {
			if m.Quiet(&l, before) {
				quiet++
				l0, active := l, m.Pool.Active()
				l0.Slots = append([]int32(nil), l.Slots...)
				if !m.Allocate(&l, before+1, 0, seq) {
					t.Fatal("a quiet allocation failed")
				}
				m.Finalize(&l, before, before+1, seq, local)
				if !reflect.DeepEqual(l0, l) || m.Pool.Active() != active {
					t.Fatalf("caching %v, before %d: quiet, yet the lease changed: %+v -> %+v", caching, before, l0, l)
				}
				continue
			}
			if !m.Allocate(&l, before+1, 0, seq) {
				t.Fatal("allocation failed")
			}
			m.Finalize(&l, before, before+1, seq, local)
		}
		if quiet < 20 {
			t.Fatalf("caching %v: only %d quiet tokens of 40", caching, quiet)
		}
	}
}
