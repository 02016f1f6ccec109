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

// TestItem34_1QuietFormula checks Quiet's arithmetic (one division, or a
// shift for a power-of-two block size) against the three divisions it
// replaced, on every block size to 64 and some larger, and leases of every
// claim, slot count and finalized count around each position.
func TestItem34_1QuietFormula(t *testing.T) {
	for _, bs := range []int{1, 2, 3, 4, 5, 7, 8, 12, 16, 31, 32, 48, 64, 100, 256, 512, 1000, 1024} {
		for _, caching := range []bool{false, true} {
			m := &Manager{BlockSize: bs, Caching: caching}
			for before := 0; before < 3*bs+5; before++ {
				for slots := 0; slots <= 5; slots++ {
					for fin := 0; fin <= 5; fin++ {
						for _, claim := range []int{0, 1} {
							l := Lease{Slots: make([]int32, slots), finalized: fin, claim: claim}
							after := before + 1
							want := l.claim == 0 && after%bs != 0 && (after+bs-1)/bs <= len(l.Slots) &&
								(!caching || l.finalized >= after/bs)
							if got := m.Quiet(&l, before); got != want {
								t.Fatalf("bs %d caching %v before %d slots %d finalized %d claim %d: %v, want %v",
									bs, caching, before, slots, fin, claim, got, want)
							}
						}
					}
				}
			}
		}
	}
}
