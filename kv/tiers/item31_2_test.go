package tiers

import (
	"slices"
	"testing"
)

// Issue 31 item 2: write-through (offload: on_store). A stored block is
// copied to G2 at the next Flush over the D2H link; evicting it from G1
// frees the slot at once when G2 holds it, holds the slot until the copy
// lands while it is in flight, and drops it when G2 had no room. on_evict
// keeps the slot until an eviction-time copy lands.
func TestItem31_2WriteThrough(t *testing.T) {
	type step struct {
		at      float64 // ms: Tick here first
		store   []int   // blocks (hash 100+i, slot i) G1 stores
		flush   bool
		evict   []int // blocks G1 evicts
		held    []bool
		freed   []int32 // Freed after the step
		quar    int     // Quarantined after the step
		g2Holds int
	}
	for _, tc := range []struct {
		name         string
		writeThrough bool
		g2           int
		steps        []step
	}{
		{"copied before eviction frees at once", true, 10, []step{
			{at: 0, store: []int{0, 1}, flush: true, g2Holds: 2},
			{at: 2, evict: []int{0, 1}, held: []bool{false, false}, g2Holds: 2},
		}},
		{"in-flight copy holds the slot until it lands", true, 10, []step{
			{at: 0, store: []int{0, 1}, flush: true},
			{at: 1, evict: []int{0}, held: []bool{true}, quar: 1},
			{at: 1.99, quar: 1},
			{at: 2, freed: []int32{0}, g2Holds: 2},
		}},
		{"queued store starts when its block is evicted", true, 10, []step{
			{at: 0, store: []int{3}},
			{at: 0, evict: []int{3}, held: []bool{true}, quar: 1},
			{at: 1, freed: []int32{3}, g2Holds: 1},
		}},
		{"no G2 room: dropped, never held", true, 1, []step{
			{at: 0, store: []int{0, 1}, flush: true, g2Holds: 1}, // block 1 finds G2 full of incoming
			{at: 1, evict: []int{1}, held: []bool{false}, g2Holds: 1},
		}},
		{"G2 evicted it since: dropped", true, 1, []step{
			{at: 0, store: []int{0}, flush: true},
			{at: 1, store: []int{1}, flush: true, g2Holds: 1}, // evicts block 0 from G2
			{at: 2, evict: []int{0}, held: []bool{false}, g2Holds: 1},
		}},
		{"on_evict: the slot waits for its copy", false, 10, []step{
			{at: 0, store: nil, evict: []int{0}, held: []bool{true}, quar: 1},
			{at: 0, flush: true, quar: 1},
			{at: 1, freed: []int32{0}, g2Holds: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSystem(t, tc.g2, 0, false)
			s.cfg.WriteThrough = tc.writeThrough
			w := s.Join(nil)
			for i, st := range tc.steps {
				w.Tick(ms(st.at))
				for _, b := range st.store {
					w.Store(uint64(100+b), int32(b))
				}
				if st.flush {
					w.Flush()
				}
				for k, b := range st.evict {
					if got := w.Offload(uint64(100+b), int32(b)); got != st.held[k] {
						t.Fatalf("step %d: evicting block %d held %v, want %v", i, b, got, st.held[k])
					}
				}
				w.Flush()
				check(t, s)
				if f := w.Freed(); !slices.Equal(f, st.freed) && len(f)+len(st.freed) > 0 {
					t.Fatalf("step %d: freed %v, want %v", i, f, st.freed)
				}
				if w.Quarantined() != st.quar {
					t.Fatalf("step %d: quarantined %d, want %d", i, w.Quarantined(), st.quar)
				}
				if st.g2Holds > 0 && w.g2.used != st.g2Holds {
					t.Fatalf("step %d: G2 holds %d, want %d", i, w.g2.used, st.g2Holds)
				}
			}
		})
	}
}

// Stores share the worker's D2H link with each other (processor sharing):
// two 32-block batches started together both land after 64 ms, not 32.
func TestItem31_2StoreContention(t *testing.T) {
	s := testSystem(t, 1000, 0, false)
	s.cfg.WriteThrough = true
	w := s.Join(nil)
	w.Tick(0)
	for i := range 64 {
		w.Store(uint64(1000+i), int32(i))
	}
	w.Flush()
	if st := s.stats.Links[G1ToG2]; st.Transfers != 2 || st.Blocks != 64 {
		t.Fatalf("transfers %d of %d blocks, want 2 of 64", st.Transfers, st.Blocks)
	}
	w.Tick(ms(63.99))
	if s.stats.Tiers[0].Offloaded != 0 {
		t.Fatalf("landed %d blocks before 64 ms", s.stats.Tiers[0].Offloaded)
	}
	w.Tick(ms(64))
	check(t, s)
	if s.stats.Tiers[0].Offloaded != 64 || w.Quarantined() != 0 {
		t.Fatalf("landed %d, quarantined %d at 64 ms", s.stats.Tiers[0].Offloaded, w.Quarantined())
	}
}
