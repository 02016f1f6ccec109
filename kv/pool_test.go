package kv

import (
	"slices"
	"testing"
)

// cached puts one referenced copy of hash into the pool.
func cached(t *testing.T, p *Pool, hash uint64) int32 {
	t.Helper()
	if !p.Reserve(nil, 1) {
		t.Fatalf("reserve for %d failed", hash)
	}
	c := p.AllocatePrivate()
	p.CachePrivate(c, hash)
	return c
}

type removals []uint64

func (r *removals) attach(p *Pool) { p.SetOnRemove(func(h uint64) { *r = append(*r, h) }) }

// B1–B10: the native pool scenarios of spec §4.3.
func TestPoolDuplicateCopies(t *testing.T) {
	p := NewPool(2)
	a := cached(t, p, 7)
	if p.Active() != 1 || p.slots[a].inLRU {
		t.Fatal("first copy not active")
	}
	if !p.Reserve(nil, 1) {
		t.Fatal("reserve second")
	}
	b := p.AllocatePrivate()
	if first := p.CachePrivate(b, 7); first {
		t.Fatal("second copy reported visible")
	}
	if got, _ := p.Lookup(7); got != a {
		t.Fatalf("primary = %d, want %d", got, a)
	}
	if p.Active() != 2 {
		t.Fatalf("active = %d, want 2", p.Active())
	}
	p.Release(a)
	p.Release(b)
	if p.Active() != 0 || p.Inactive() != 2 {
		t.Fatalf("active/inactive = %d/%d, want 0/2", p.Active(), p.Inactive())
	}
}

func TestPoolPinnedCopyIsNotEvictedForItsOwnReservation(t *testing.T) {
	p := NewPool(1)
	c := cached(t, p, 9)
	p.Release(c)
	if p.Reserve([]int32{c}, 1) {
		t.Fatal("reserve succeeded by evicting the pinned copy")
	}
	if p.Active() != 0 || p.Inactive() != 1 {
		t.Fatalf("state changed: active %d inactive %d", p.Active(), p.Inactive())
	}
}

func TestPoolPrefixHitPlusFresh(t *testing.T) {
	p := NewPool(2)
	var rm removals
	rm.attach(p)
	c := cached(t, p, 7)
	p.Release(c)
	if !p.Reserve([]int32{c}, 1) {
		t.Fatal("reserve failed")
	}
	if len(rm) != 0 || p.Inactive() != 0 || p.Active() != 2 {
		t.Fatalf("removed %v, inactive %d, active %d", rm, p.Inactive(), p.Active())
	}
}

func TestPoolEvictsDuplicateCopiesOneByOne(t *testing.T) {
	p := NewPool(4)
	var rm removals
	rm.attach(p)
	var cs []int32
	for range 4 {
		if !p.Reserve(nil, 1) {
			t.Fatal("reserve")
		}
		c := p.AllocatePrivate()
		p.CachePrivate(c, 3)
		cs = append(cs, c)
	}
	for _, c := range cs {
		p.Release(c)
	}
	for i, n := range []int{1, 2, 3} {
		if !p.Reserve(nil, n) {
			t.Fatalf("reserve %d failed", n)
		}
		p.Cancel(nil, n)
		if len(rm) != 0 {
			t.Fatalf("reserve %d reported removal %v", n, rm)
		}
		if p.Inactive() != 3-i {
			t.Fatalf("after reserve %d: inactive %d", n, p.Inactive())
		}
		if i == 0 {
			if got, _ := p.Lookup(3); got != cs[1] {
				t.Fatalf("primary after first eviction = %d, want %d", got, cs[1])
			}
		}
	}
	if !p.Reserve(nil, 4) {
		t.Fatal("reserve 4")
	}
	if !slices.Equal(rm, []uint64{3}) {
		t.Fatalf("removed = %v, want [3]", rm)
	}
}

func TestPoolCancelUnpinsLeafFirst(t *testing.T) {
	p := NewPool(2)
	var rm removals
	rm.attach(p)
	parent, leaf := cached(t, p, 7), cached(t, p, 8)
	p.Release(leaf)
	p.Release(parent)
	if !p.Reserve([]int32{parent, leaf}, 0) {
		t.Fatal("reserve prefix")
	}
	p.Cancel([]int32{parent, leaf}, 0)
	if !p.Reserve(nil, 1) {
		t.Fatal("reserve fresh")
	}
	if !slices.Equal(rm, []uint64{8}) {
		t.Fatalf("removed %v, want [8]", rm)
	}
	if _, ok := p.Lookup(7); !ok {
		t.Fatal("parent evicted")
	}
}

func TestPoolUnpinnedCopyReturnsToTail(t *testing.T) {
	p := NewPool(3)
	var rm removals
	rm.attach(p)
	c1, c2, c3 := cached(t, p, 1), cached(t, p, 2), cached(t, p, 3)
	p.Release(c1)
	p.Release(c2)
	p.Release(c3)
	if !p.Reserve([]int32{c2}, 1) {
		t.Fatal("reserve")
	}
	if !slices.Equal(rm, []uint64{1}) {
		t.Fatalf("removed %v, want [1]", rm)
	}
	p.Cancel([]int32{c2}, 1)
	if !p.Reserve(nil, 2) {
		t.Fatal("reserve 2")
	}
	if !slices.Equal(rm, []uint64{1, 3}) {
		t.Fatalf("removed %v, want [1 3]", rm)
	}
}

func TestPoolPrivateReleaseFreesAtOnce(t *testing.T) {
	p := NewPool(2)
	if !p.Reserve(nil, 2) {
		t.Fatal("reserve")
	}
	a, b := p.AllocatePrivate(), p.AllocatePrivate()
	if p.Free() != 0 || p.Active() != 2 {
		t.Fatalf("free %d active %d", p.Free(), p.Active())
	}
	p.Release(a)
	p.Release(b)
	if p.Free() != 2 || p.Active() != 0 || p.Inactive() != 0 {
		t.Fatalf("free %d active %d inactive %d", p.Free(), p.Active(), p.Inactive())
	}
	if p.Reserve(nil, 3) {
		t.Fatal("over-reserve succeeded")
	}
}
