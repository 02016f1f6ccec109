package kv

import (
	"slices"
	"testing"
)

// K1: a finalized block whose parent is already visible yields one Stored
// event carrying the parent hash, the block and tokens hashes, id 0 and the
// manager's DP rank.
func TestK1StoredEventPayload(t *testing.T) {
	log := &EventLog{DPRank: 3}
	m := NewManager(8, 4, true, log)
	seq, local := []uint64{6, 7}, []uint64{106, 107}
	var parent Lease
	m.Allocate(&parent, 4, 0, seq)
	m.Finalize(&parent, 0, 4, seq, local)
	log.Drain()
	var l Lease
	overlap, _ := m.Match(seq)
	if overlap != 1 || !m.Allocate(&l, 8, overlap, seq) {
		t.Fatalf("overlap %d", overlap)
	}
	m.Finalize(&l, 4, 8, seq, local)
	ev := log.Drain()
	if len(ev) != 1 {
		t.Fatalf("events %+v", ev)
	}
	e := ev[0]
	if e.Kind != Stored || !e.HasParent || e.Parent != 6 || e.DPRank != 3 || e.ID != 1 ||
		!slices.Equal(e.Blocks, []StoredBlock{{BlockHash: 7, TokensHash: 107}}) {
		t.Fatalf("event %+v", e)
	}
}

// A block is prefix-visible only once finalized; finalizing tokens 3..9 with
// block 4 makes blocks 0 and 1 visible but not block 2.
func TestVisibilityFollowsFinalization(t *testing.T) {
	m := NewManager(8, 4, true, nil)
	seq, local := []uint64{1, 2, 3}, []uint64{11, 12, 13}
	var l Lease
	m.Allocate(&l, 10, 0, seq)
	if o, _ := m.Match(seq); o != 0 {
		t.Fatalf("visible before finalization: %d", o)
	}
	m.Finalize(&l, 3, 9, seq, local)
	if o, a := m.Match(seq); o != 2 || a != 2 {
		t.Fatalf("overlap %d active %d, want 2/2", o, a)
	}
}

// A finished 2-block request, then a new 1-block request on a 2-slot pool:
// the leaf (hash 8) is evicted, the parent (hash 7) kept.
func TestReleaseLeafFirst(t *testing.T) {
	log := &EventLog{}
	m := NewManager(2, 4, true, log)
	seq := []uint64{7, 8}
	var a Lease
	m.Allocate(&a, 8, 0, seq)
	m.Finalize(&a, 0, 8, seq, []uint64{0, 0})
	m.Release(&a)
	var b Lease
	if !m.Allocate(&b, 4, 0, []uint64{99}) {
		t.Fatal("allocate")
	}
	if _, ok := m.Pool.Lookup(7); !ok {
		t.Fatal("parent evicted")
	}
	var removed []uint64
	for _, e := range log.Drain() {
		if e.Kind == Removed {
			removed = append(removed, e.Removed...)
		}
	}
	if !slices.Equal(removed, []uint64{8}) {
		t.Fatalf("removed %v, want [8]", removed)
	}
}

// Without prefix caching nothing is findable and nothing is published.
func TestCachingOff(t *testing.T) {
	log := &EventLog{}
	m := NewManager(4, 4, false, log)
	seq := []uint64{1, 2}
	var l Lease
	m.Allocate(&l, 8, 2, seq)
	m.Finalize(&l, 0, 8, seq, seq)
	m.Release(&l)
	if o, _ := m.Match(seq); o != 0 || len(log.Drain()) != 0 || m.Pool.Inactive() != 0 || m.Pool.Free() != 4 {
		t.Fatalf("caching off: overlap %d", o)
	}
}
