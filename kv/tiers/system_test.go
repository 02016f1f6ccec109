package tiers

import (
	"math"
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/kv"
	"github.com/dynosim/dynosim-web/timing"
)

// testSystem has 1 MB blocks over 1 GB/s links: a lone block takes 1 ms on
// any link.
func testSystem(t *testing.T, g2, g3 int, g4 bool) *System {
	t.Helper()
	s := Settings{BlockSize: 1, BytesPerToken: 1e6, G2Blocks: g2, G3Blocks: g3, G4: g4, BatchBlocks: 32,
		G1ToG2: 1, G2ToG1: 1, G2ToG3: 1, G3ToG2: 1, G2ToG4: 1, G4ToG2: 1}
	c, err := Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	return New(c)
}

func ms(v float64) timing.Time { return timing.FromMs(v) }

func check(t *testing.T, s *System) {
	t.Helper()
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// Offload is batched by offload_batch_blocks: a full batch starts at once,
// the rest at Flush; the quarantined G1 slots come back as their batch
// lands. Under processor sharing the short batch lands first.
func TestOffloadBatching(t *testing.T) {
	s := testSystem(t, 100, 0, false)
	w := s.Join(nil)
	w.Tick(0)
	for i := range 70 {
		if !w.Offload(uint64(1000+i), int32(i)) {
			t.Fatalf("block %d not offloaded", i)
		}
		if i == 31 && s.stats.Links[G1ToG2].Transfers != 1 {
			t.Fatalf("a full batch of 32 did not start at once")
		}
	}
	w.Flush()
	if st := s.stats.Links[G1ToG2]; st.Transfers != 3 || st.Blocks != 70 {
		t.Fatalf("transfers %d of %d blocks, want 3 of 70 (32, 32, 6)", st.Transfers, st.Blocks)
	}
	if w.Quarantined() != 70 {
		t.Fatalf("quarantined %d, want 70", w.Quarantined())
	}
	// Three batches share 1 MB/ms: the 6-block one lands after 3×6 = 18 ms,
	// the two 32-block ones after 18 + 2×26 = 70 ms.
	w.Tick(ms(17.99))
	check(t, s)
	if f := w.Freed(); len(f) != 0 {
		t.Fatalf("freed %d slots at 17.99 ms", len(f))
	}
	w.Tick(ms(18))
	check(t, s)
	if f := w.Freed(); !slices.Equal(f, []int32{64, 65, 66, 67, 68, 69}) {
		t.Fatalf("freed %v at 18 ms, want the last batch's slots", f)
	}
	w.Tick(ms(69.99))
	check(t, s)
	if f := w.Freed(); len(f) != 0 {
		t.Fatalf("freed %d slots at 69.99 ms", len(f))
	}
	w.Tick(ms(70))
	check(t, s)
	if f := w.Freed(); len(f) != 64 {
		t.Fatalf("freed %d slots at 70 ms, want 64", len(f))
	}
	if w.Quarantined() != 0 || s.stats.Tiers[0].Offloaded != 70 || w.g2.used != 70 {
		t.Fatalf("quarantined %d, offloaded %d, G2 holds %d", w.Quarantined(), s.stats.Tiers[0].Offloaded, w.g2.used)
	}
	// G2 already has it: no copy, the G1 slot is free at once.
	if w.Offload(1000, 7) {
		t.Error("a block G2 holds was copied again")
	}
}

// G2 never holds more than its capacity: offloads evict its least
// recently used blocks, and Removed events name them (tier host_pinned).
func TestG2Capacity(t *testing.T) {
	s := testSystem(t, 4, 0, false)
	events := &kv.EventLog{}
	w := s.Join(events)
	w.Tick(0)
	for i := range 10 {
		w.Offload(uint64(i+1), int32(i))
		w.Flush()
		w.Tick(ms(float64(i + 1)))
		if w.g2.used > 4 {
			t.Fatalf("G2 holds %d blocks, capacity 4", w.g2.used)
		}
	}
	if n := w.Lookup([]uint64{7, 8, 9, 10}); n != 4 {
		t.Errorf("the 4 newest blocks: %d resident", n)
	}
	if n := w.Lookup([]uint64{1}); n != 0 {
		t.Error("the oldest block survived")
	}
	var stored, removed int
	for _, e := range events.Drain() {
		if e.Tier != kv.HostPinned {
			t.Fatalf("event %+v: tier %v", e, e.Tier)
		}
		if e.Kind == kv.Stored {
			stored += len(e.Blocks)
		} else {
			removed += len(e.Removed)
		}
	}
	if stored != 10 || removed != 6 || s.stats.Tiers[0].Evicted != 6 {
		t.Errorf("stored %d, removed %d, evicted %d; want 10, 6, 6", stored, removed, s.stats.Tiers[0].Evicted)
	}
}

// A G3 hit stages through G2: G3→G2 on the shared link, then G2→G1 on the
// worker's own; the request is ready when both legs are done, and the
// block stays in G2 after.
func TestOnboardStagesThroughG2(t *testing.T) {
	s := testSystem(t, 10, 10, false)
	w := s.Join(nil)
	w.Tick(0)
	// Blocks 1, 2 offloaded: they land in G2 at 2 ms and are written
	// through to G3 by 4 ms.
	w.Offload(1, 0)
	w.Offload(2, 1)
	w.Flush()
	w.Tick(ms(4))
	check(t, s)
	if s.stats.Tiers[1].Offloaded != 2 {
		t.Fatalf("G3 has %d blocks, want 2", s.stats.Tiers[1].Offloaded)
	}
	// Evict block 2 from G2 by filling it, so it is only in G3.
	w.g2.evict(func() int32 { sl, _ := w.g2.residentSlot(2); return sl }())
	if n := w.Lookup([]uint64{1, 2, 3}); n != 2 {
		t.Fatalf("lookup found %d, want 2 (G2, then G3)", n)
	}
	w.Tick(ms(10))
	check(t, s)
	if n := w.Onboard(77, []uint64{1, 2}); n != 2 {
		t.Fatalf("onboard took %d blocks, want 2", n)
	}
	// Block 1: G2→G1 from 10 ms; block 2: G3→G2 from 10 ms (done at 11),
	// then G2→G1 shares the onboard link with block 1 from 11 ms: block 1
	// had 0 MB left at 11 (done), so block 2 runs alone, done at 12 ms.
	if at, ok := w.Deadline(); !ok || at != ms(11) {
		t.Fatalf("deadline %v, %v; want 11 ms", at, ok)
	}
	w.Tick(ms(11.5))
	check(t, s)
	if r := w.Ready(); len(r) != 0 {
		t.Fatalf("ready %v at 11.5 ms", r)
	}
	w.Tick(ms(12))
	check(t, s)
	if r := w.Ready(); !slices.Equal(r, []uint64{77}) {
		t.Fatalf("ready %v at 12 ms, want [77]", r)
	}
	if _, ok := w.g2.residentSlot(2); !ok {
		t.Error("the staged block is not in G2")
	}
	st := s.stats
	if st.Tiers[0].Hits != 1 || st.Tiers[1].Hits != 1 || st.Tiers[1].Onboarded != 1 || st.Tiers[0].Onboarded != 2 {
		t.Errorf("tier stats %+v", st.Tiers)
	}
	if w.Onboarding() != 0 || w.g2.order.live == 0 {
		t.Errorf("onboarding %d, G2 LRU empty: pins leaked", w.Onboarding())
	}
}

// Without G2 room for staging, only the leading G2-resident blocks come.
func TestOnboardSkipsStagingWithoutRoom(t *testing.T) {
	s := testSystem(t, 1, 10, false)
	w := s.Join(nil)
	w.Tick(0)
	w.Offload(1, 0)
	w.Flush()
	w.Tick(ms(2)) // block 1 in G2 and G3
	w.Offload(2, 1)
	w.Flush()
	w.Tick(ms(4)) // block 2 evicted block 1 from G2; both in G3
	if _, ok := w.g2.residentSlot(2); !ok {
		t.Fatal("block 2 not in G2")
	}
	// Block 2 (G2) then block 3... only block 2 is pinned in the one G2
	// slot, so block 1 (G3) cannot stage: asking for [2, 1] brings 1 block.
	if n := w.Onboard(5, []uint64{2, 1}); n != 1 {
		t.Fatalf("onboard took %d blocks, want 1 (the G2 block only)", n)
	}
	w.Tick(ms(10))
	check(t, s)
	if r := w.Ready(); !slices.Equal(r, []uint64{5}) {
		t.Fatalf("ready %v", r)
	}
	if s.stats.Tiers[1].Hits != 0 {
		t.Errorf("G3 hits %d, want 0 (staging skipped)", s.stats.Tiers[1].Hits)
	}
	// Asking for [1] alone stages it (block 2 is unpinned now).
	if n := w.Onboard(6, []uint64{1}); n != 1 {
		t.Fatalf("onboard of a G3 block took %d", n)
	}
}

// Shared links are processor-shared across workers: two workers staging
// one block each from G3 at once both wait 2 ms for that leg.
func TestSharedLinkAcrossWorkers(t *testing.T) {
	s := testSystem(t, 4, 10, false)
	a, b := s.Join(nil), s.Join(nil)
	a.Tick(0)
	a.Offload(1, 0)
	a.Flush()
	b.Tick(0)
	b.Offload(2, 0)
	b.Flush()
	a.Tick(ms(10)) // both landed in G2 (1 ms) and G3 (two at once: 3 ms)
	for _, w := range []*Worker{a, b} {
		for _, h := range []uint64{1, 2} {
			if sl, ok := w.g2.residentSlot(h); ok {
				w.g2.evict(sl)
			}
		}
	}
	b.Tick(ms(10))
	check(t, s)
	if a.Onboard(1, []uint64{2}) != 1 || b.Onboard(2, []uint64{1}) != 1 {
		t.Fatal("onboard failed")
	}
	// G3→G2: two 1 MB transfers share 1 MB/ms → both at 12 ms; then each
	// worker's own G2→G1 link: 13 ms.
	b.Tick(ms(12.99))
	check(t, s)
	if len(a.Ready())+len(b.Ready()) != 0 {
		t.Fatal("ready before 13 ms")
	}
	a.Tick(ms(13))
	check(t, s)
	if !slices.Equal(a.Ready(), []uint64{1}) || !slices.Equal(b.Ready(), []uint64{2}) {
		t.Fatal("not both ready at 13 ms")
	}
	if math.Abs(s.Snapshot().BusyMs[G3ToG2]-2) > 1e-9 {
		t.Errorf("G3→G2 busy %v ms, want 2", s.Snapshot().BusyMs[G3ToG2])
	}
}
