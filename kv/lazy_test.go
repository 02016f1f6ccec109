package kv

import (
	"math"
	"runtime"
	"slices"
	"testing"
)

// Issue 29 item 9: a pool allocates a slot on first use, so an unused
// 2^24-slot pool costs next to nothing (it took about a gigabyte up front),
// and it hands out the ids an eagerly filled free stack did: fresh ids in
// order, freed ones first, newest freed first.
func TestItem9PoolAllocatesOnFirstUse(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(int) BlockPool
	}{
		{"native", func(n int) BlockPool { return NewPool(n) }},
		{"lineage", func(n int) BlockPool { return NewLineagePool(n) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// TotalAlloc is process-wide: another test's goroutine can
			// allocate between the two reads. Such noise only adds, so the
			// least of five tries is this pool's own allocation (a pool that
			// allocated its slots up front would show ≥ 64 MiB every time).
			var big BlockPool
			least := uint64(math.MaxUint64)
			for range 5 {
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				big = tc.make(1 << 24)
				runtime.ReadMemStats(&m1)
				least = min(least, m1.TotalAlloc-m0.TotalAlloc)
			}
			if least > 4<<10 {
				t.Errorf("an unused 2^24-slot pool allocated %d bytes", least)
			}
			if big.Capacity() != 1<<24 || big.Free() != 1<<24 || big.Active() != 0 {
				t.Errorf("capacity/free/active = %d/%d/%d", big.Capacity(), big.Free(), big.Active())
			}

			p := tc.make(4)
			take := func(n int) []int32 {
				if !p.Reserve(nil, n) {
					t.Fatalf("reserve %d: free %d", n, p.Free())
				}
				var ids []int32
				for range n {
					ids = append(ids, p.AllocatePrivate())
				}
				return ids
			}
			if got := take(3); !slices.Equal(got, []int32{0, 1, 2}) {
				t.Fatalf("fresh ids %v, want 0 1 2", got)
			}
			p.Release(0)
			p.Release(2)
			if p.Free() != 3 || p.Active() != 1 {
				t.Fatalf("free/active = %d/%d, want 3/1", p.Free(), p.Active())
			}
			if got := take(3); !slices.Equal(got, []int32{2, 0, 3}) {
				t.Fatalf("ids %v, want the freed 2 and 0, then the fresh 3", got)
			}
			if p.Free() != 0 || p.Active() != 4 || p.Reserve(nil, 1) {
				t.Fatalf("full pool: free/active = %d/%d", p.Free(), p.Active())
			}
		})
	}
}
