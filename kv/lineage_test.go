package kv

import (
	"slices"
	"testing"
)

func register(t *testing.T, p BlockPool, hash uint64, parent int32) int32 {
	t.Helper()
	if !p.Reserve(nil, 1) {
		t.Fatalf("reserve for %d failed", hash)
	}
	c, _ := p.Register(p.AllocatePrivate(), hash, parent)
	return c
}

// A parent released before its child: native LRU evicts the parent first
// (orphaning the child in a router's index); the lineage pool evicts only
// leaves, and the parent, a leaf again, keeps its original (oldest) place.
func TestLineageEvictsLeavesFirst(t *testing.T) {
	for _, tc := range []struct {
		name string
		pool BlockPool
		want []uint64
	}{
		{"native", NewPool(3), []uint64{7, 8, 9}},
		{"kvbm", NewLineagePool(3), []uint64{8, 7, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var removed removals
			tc.pool.SetOnRemove(func(h uint64) { removed = append(removed, h) })
			a := register(t, tc.pool, 7, -1)
			b := register(t, tc.pool, 8, a)
			x := register(t, tc.pool, 9, -1)
			tc.pool.Release(a)
			tc.pool.Release(b)
			tc.pool.Release(x)
			for range 3 {
				if !tc.pool.Reserve(nil, 1) {
					t.Fatal("reserve failed")
				}
				tc.pool.AllocatePrivate()
			}
			if !slices.Equal(removed, tc.want) {
				t.Fatalf("removed %v, want %v", removed, tc.want)
			}
		})
	}
}

// One physical block per hash: a second registration collapses onto the
// resident block (reviving it if inactive) and frees the duplicate slot.
func TestLineageDeduplicates(t *testing.T) {
	p := NewLineagePool(4)
	a := register(t, p, 7, -1)
	b := register(t, p, 7, -1)
	if a != b || p.Active() != 1 {
		t.Fatalf("copies %d %d active %d", a, b, p.Active())
	}
	p.Release(a)
	p.Release(b)
	if p.Active() != 0 || p.Inactive() != 1 {
		t.Fatalf("active %d inactive %d", p.Active(), p.Inactive())
	}
	c := register(t, p, 7, -1) // recomputed: collapses onto the inactive block
	if c != a || p.Active() != 1 || p.Inactive() != 0 || p.Free() != 3 {
		t.Fatalf("revived %d active %d inactive %d free %d", c, p.Active(), p.Inactive(), p.Free())
	}
}
