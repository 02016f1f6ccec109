package kv

import (
	"slices"
	"testing"
)

// keys1 turns page-1 token lists into page keys (the tokens themselves: the
// tree only compares keys).
func keys1(toks ...uint64) []uint64 { return toks }

// R1: page pool bookkeeping (12 tokens, page 4).
func TestR1PagePool(t *testing.T) {
	p := NewPagePool(12 / 4)
	a, ok := p.Alloc(2, nil)
	if !ok || !slices.Equal(a, []int32{0, 1}) || p.Available() != 1 {
		t.Fatalf("alloc %v ok %v available %d", a, ok, p.Available())
	}
	if _, ok := p.Alloc(2, nil); ok {
		t.Fatal("over-allocation succeeded")
	}
	p.Free(a...)
	b, ok := p.Alloc(3, nil)
	if !ok || !slices.Equal(b, []int32{0, 1, 2}) || p.Available() != 0 {
		t.Fatalf("realloc %v available %d", b, p.Available())
	}
}

// The page pool publishes a block hash when its first page holds it and
// removes it when its last page is freed, at the next Flush; a run of new
// hashes is one Stored event, broken by a hash already visible.
func TestPagePoolEvents(t *testing.T) {
	log := &EventLog{DPRank: 2}
	p := NewPagePool(8)
	p.Publish(log, false)
	seq, keys := []uint64{101, 102, 103}, []uint64{1, 2, 3}
	a, _ := p.Alloc(3, nil)
	p.Store(a, seq, keys, 0, 3)
	b, _ := p.Alloc(3, nil) // a second request computing the same blocks
	p.Store(b, seq, keys, 0, 2)
	p.Store(b, []uint64{101, 102, 204}, []uint64{1, 2, 4}, 2, 3)
	p.Store(a, seq, keys, 0, 3) // pages already holding their hash
	p.Free(a...)
	p.Flush()
	p.Free(b...)
	p.Flush()
	p.Flush()
	ev := log.Drain()
	want := []Event{
		{ID: 0, DPRank: 2, Kind: Stored, Blocks: []StoredBlock{{101, 1}, {102, 2}, {103, 3}}},
		{ID: 1, DPRank: 2, Kind: Stored, Parent: 102, HasParent: true, Blocks: []StoredBlock{{204, 4}}},
		{ID: 2, DPRank: 2, Kind: Removed, Removed: []uint64{103}},
		{ID: 3, DPRank: 2, Kind: Removed, Removed: []uint64{101, 102, 204}},
	}
	if len(ev) != len(want) {
		t.Fatalf("events %+v", ev)
	}
	for i := range want {
		e, w := ev[i], want[i]
		if e.ID != w.ID || e.DPRank != w.DPRank || e.Kind != w.Kind || e.Parent != w.Parent || e.HasParent != w.HasParent ||
			!slices.Equal(e.Blocks, w.Blocks) || !slices.Equal(e.Removed, w.Removed) {
			t.Fatalf("event %d: %+v, want %+v", i, e, w)
		}
	}
	// With one-token pages the keys are the tokens; events carry their hash.
	p = NewPagePool(1)
	p.Publish(log, true)
	c, _ := p.Alloc(1, nil)
	p.Store(c, []uint64{9}, []uint64{42}, 0, 1)
	if ev := log.Drain(); len(ev) != 1 || ev[0].Blocks[0].TokensHash != LocalHash([]uint32{42}) {
		t.Fatalf("page-1 events %+v", ev)
	}
}

// R2, R3: match/insert/split on page 1, and insert idempotence.
func TestR2R3MatchInsertSplit(t *testing.T) {
	r := NewRadix(1)
	dup, _, _ := r.InsertFrom(RadixRoot, keys1(1, 2, 3, 4, 5), []int32{10, 20, 30, 40, 50}, false, 0, nil)
	if dup != 0 {
		t.Fatalf("dup %d", dup)
	}
	pg := []int32{11, 21, 31, 41, 51, 60, 70}
	dup, _, disp := r.InsertFrom(RadixRoot, keys1(1, 2, 3, 4, 5, 6, 7), pg, false, 0, nil)
	if !slices.Equal(pg, []int32{10, 20, 30, 40, 50, 60, 70}) || !slices.Equal(disp, []int32{11, 21, 31, 41, 51}) {
		t.Fatalf("pages %v displaced %v", pg, disp)
	}
	if dup != 5 {
		t.Fatalf("second insert dup %d, want 5", dup)
	}
	pages, n := r.Match(keys1(1, 2, 3, 4, 5, 9, 9), nil)
	if len(pages) != 5 || !slices.Equal(pages, []int32{10, 20, 30, 40, 50}) {
		t.Fatalf("match %v", pages)
	}
	var child []int32
	for _, c := range r.nodes[n].children {
		child = r.nodes[c].pages
	}
	if !slices.Equal(child, []int32{60, 70}) {
		t.Fatalf("child pages %v", child)
	}
	// A match ending inside an edge splits it.
	pages, n = r.Match(keys1(1, 2, 3), nil)
	if len(pages) != 3 || r.PathLen(n) != 3 {
		t.Fatalf("split match %v pathlen %d", pages, r.PathLen(n))
	}
	if r.Len() != 7 || r.Peek(keys1(1, 2, 3, 4, 5, 6, 7, 8)) != 7 {
		t.Fatalf("len %d peek %d", r.Len(), r.Peek(keys1(1, 2, 3, 4, 5, 6, 7, 8)))
	}
	// Idempotence.
	dup, _, _ = r.InsertFrom(RadixRoot, keys1(1, 2, 3, 4, 5, 6, 7), []int32{1, 2, 3, 4, 5, 6, 7}, false, 0, nil)
	if dup != 7 || r.Len() != 7 {
		t.Fatalf("re-insert dup %d len %d", dup, r.Len())
	}
}

// R4: page-4 matching compares whole pages.
func TestR4PageMatching(t *testing.T) {
	r := NewRadix(4)
	r.InsertFrom(RadixRoot, []uint64{LocalHash([]uint32{1, 2, 3, 4})}, []int32{0}, false, 0, nil)
	if got := r.Peek([]uint64{LocalHash([]uint32{1, 2, 3, 6})}); got != 0 {
		t.Fatalf("[1,2,3,6] matched %d pages", got)
	}
	if got := r.Peek([]uint64{LocalHash([]uint32{1, 2, 3, 4})}); got != 1 {
		t.Fatalf("[1,2,3,4] matched %d pages", got)
	}
	if r.Len() != 4 {
		t.Fatalf("len %d tokens", r.Len())
	}
}

// R5: lock accounting across two branches (2 shared + 2 + 3).
func TestR5LockAccounting(t *testing.T) {
	r := NewRadix(1)
	_, a, _ := r.InsertFrom(RadixRoot, keys1(1, 2, 3, 4), []int32{1, 2, 3, 4}, false, 0, nil)
	_, b, _ := r.InsertFrom(RadixRoot, keys1(1, 2, 7, 8, 9), []int32{1, 2, 7, 8, 9}, false, 0, nil)
	r.Lock(a)
	r.Lock(b)
	if r.Protected() != 7 || r.Evictable() != 0 {
		t.Fatalf("protected %d evictable %d", r.Protected(), r.Evictable())
	}
	r.Unlock(a)
	if r.Protected() != 5 || r.Evictable() != 2 {
		t.Fatalf("after unlock: protected %d evictable %d", r.Protected(), r.Evictable())
	}
	if got := r.Evict(10, nil); !slices.Equal(got, []int32{3, 4}) {
		t.Fatalf("evicted %v; locked branch must stay", got)
	}
}

// R6, R7: LRU eviction, locked nodes never evicted, touching reorders.
func TestR6R7LRU(t *testing.T) {
	r := NewRadix(1)
	r.InsertFrom(RadixRoot, keys1(1, 2, 3), []int32{1, 2, 3}, false, 0, nil)
	r.InsertFrom(RadixRoot, keys1(4, 5, 6), []int32{4, 5, 6}, false, 0, nil)
	if got := r.Evict(3, nil); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("evicted %v, want the older [1,2,3]", got)
	}

	r = NewRadix(1)
	r.InsertFrom(RadixRoot, keys1(1, 2, 3), []int32{1, 2, 3}, false, 0, nil)
	r.InsertFrom(RadixRoot, keys1(4, 5, 6), []int32{4, 5, 6}, false, 0, nil)
	r.Match(keys1(1, 2, 3), nil) // touch: now [4,5,6] is older
	if got := r.Evict(3, nil); !slices.Equal(got, []int32{4, 5, 6}) {
		t.Fatalf("evicted %v after touch, want [4,5,6]", got)
	}
	_, n := r.Match(keys1(1, 2, 3), nil)
	r.Lock(n)
	if got := r.Evict(3, nil); len(got) != 0 {
		t.Fatalf("evicted locked pages %v", got)
	}
}

// R8: evicting part of a leaf trims its newest pages and keeps the prefix.
func TestR8PartialLeafEviction(t *testing.T) {
	r := NewRadix(1)
	r.InsertFrom(RadixRoot, keys1(1, 2, 3, 4, 5), []int32{1, 2, 3, 4, 5}, false, 0, nil)
	if got := r.Evict(2, nil); !slices.Equal(got, []int32{4, 5}) {
		t.Fatalf("evicted %v", got)
	}
	if r.Peek(keys1(1, 2, 3, 4, 5)) != 3 || r.Evictable() != 3 {
		t.Fatalf("peek %d evictable %d", r.Peek(keys1(1, 2, 3, 4, 5)), r.Evictable())
	}
}

// R9: unlocked internal nodes are evictable once their leaves go (16-token
// pool, page 4, 12 evictable tokens → all freed).
func TestR9InternalNodesEvictable(t *testing.T) {
	r := NewRadix(4)
	k := func(i uint32) uint64 { return LocalHash([]uint32{i, i, i, i}) }
	r.InsertFrom(RadixRoot, []uint64{k(1), k(2)}, []int32{0, 1}, false, 0, nil)
	r.InsertFrom(RadixRoot, []uint64{k(1), k(3)}, []int32{0, 2}, false, 0, nil)
	if r.Evictable() != 12 {
		t.Fatalf("evictable %d, want 12", r.Evictable())
	}
	got := r.Evict(4, nil)
	slices.Sort(got)
	if !slices.Equal(got, []int32{0, 1, 2}) || r.Len() != 0 {
		t.Fatalf("evicted %v, left %d", got, r.Len())
	}
}

// In-place extension of a caller-held leaf keeps matching exact.
func TestRadixExtendHeldLeaf(t *testing.T) {
	r := NewRadix(1)
	_, n, _ := r.InsertFrom(RadixRoot, keys1(1, 2), []int32{1, 2}, false, 1, nil) // room for one more page
	r.Lock(n)
	_, m, _ := r.InsertFrom(n, keys1(3), []int32{3}, true, 0, nil)
	if m != n || r.Protected() != 3 || r.Peek(keys1(1, 2, 3)) != 3 {
		t.Fatalf("extend: node %d/%d protected %d", m, n, r.Protected())
	}
	// Another sequence now shares [1,2] and splits the extended leaf.
	pages, s := r.Match(keys1(1, 2, 9), nil)
	if len(pages) != 2 || r.PathLen(s) != 2 || r.PathLen(n) != 3 {
		t.Fatalf("split after extend: %v %d %d", pages, r.PathLen(s), r.PathLen(n))
	}
	r.Unlock(n)
	if r.Evictable() != 3 || r.Protected() != 0 {
		t.Fatalf("evictable %d protected %d", r.Evictable(), r.Protected())
	}
	// Without spare capacity a held leaf grows a child instead of copying.
	r.Lock(n)
	_, m, _ = r.InsertFrom(n, keys1(4), []int32{4}, true, 0, nil)
	if m == n || r.PathLen(m) != 4 || r.Protected() != 3 || r.Evictable() != 1 {
		t.Fatalf("child: node %d/%d pathlen %d protected %d", m, n, r.PathLen(m), r.Protected())
	}
}
