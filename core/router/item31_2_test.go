package router

import (
	"testing"

	"github.com/dynosim/dynosim-web/kv"
)

// Issue 31 item 2: the KV router credits prompt blocks a worker holds in
// G2 (host_pinned events) and G3 (disk events) past its G1 match, at
// router.host_cache_hit_weight and router.disk_cache_hit_weight.
func TestItem31_2LowerTierCredit(t *testing.T) {
	prompt := make([]uint32, 24) // 6 blocks of 4
	for i := range prompt {
		prompt[i] = uint32(7000 + i)
	}
	ix := NewIndexer(4)
	h := ix.Hashes(prompt, nil)
	stored := func(id uint64, tier kv.Tier, hashes ...uint64) kv.Event {
		ev := kv.Event{ID: id, Kind: kv.Stored, Tier: tier}
		for _, x := range hashes {
			ev.Blocks = append(ev.Blocks, kv.StoredBlock{BlockHash: x})
		}
		return ev
	}
	// Worker 0: block 0 in G1, blocks 1-2 in G2, block 3 in G3, block 5
	// in G2 past the gap at 4. Worker 1: nothing.
	events := []kv.Event{
		stored(0, kv.Device, h[0]),
		stored(1, kv.HostPinned, h[1], h[2], h[5]),
		stored(2, kv.Disk, h[3]),
	}
	if err := ix.Apply(0, events); err != nil {
		t.Fatal(err)
	}
	if d := ix.Overlap(0, 0, h); d != 1 {
		t.Fatalf("device overlap %d, want 1", d)
	}
	if host, disk := ix.LowerOverlap(0, 0, h, 1); host != 2 || disk != 1 {
		t.Fatalf("lower overlap host %d disk %d, want 2 and 1", host, disk)
	}
	// A Removed host event takes the block out of the credit.
	if err := ix.Apply(0, []kv.Event{{ID: 3, Kind: kv.Removed, Tier: kv.HostPinned, Removed: []uint64{h[2]}}}); err != nil {
		t.Fatal(err)
	}
	if host, disk := ix.LowerOverlap(0, 0, h, 1); host != 1 || disk != 0 {
		t.Fatalf("after removal: host %d disk %d, want 1 and 0", host, disk)
	}

	for _, tc := range []struct {
		name       string
		host, disk float64
		onlyZero   bool // every seed places on worker 0
	}{
		{"default weights prefer the host hit", 0.75, 0.25, true},
		{"host weight alone", 0.75, 0, true},
		{"no credit: a tie broken at random", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[int]int{}
			for seed := range uint64(16) {
				cost := DefaultCostConfig()
				cost.HostCacheHitWeight, cost.DiskCacheHitWeight = tc.host, tc.disk
				r, err := NewKV(KVConfig{Cost: cost, BlockSize: 4, Seed: seed, UseEvents: true})
				if err != nil {
					t.Fatal(err)
				}
				// Only lower-tier blocks on worker 0, so G1 gives no edge.
				r.Observe(0, []kv.Event{stored(0, kv.HostPinned, h[0], h[1])})
				p, ok := r.Place(&Request{ID: 1, Prompt: prompt}, view{1, 1})
				if !ok {
					t.Fatal("not placed")
				}
				seen[p.Worker]++
			}
			if tc.onlyZero != (seen[1] == 0) {
				t.Fatalf("placements %v", seen)
			}
		})
	}
}

// The defaults are upstream's (KvRouterConfig::default).
func TestItem31_2DefaultWeights(t *testing.T) {
	if c := DefaultCostConfig(); c.HostCacheHitWeight != 0.75 || c.DiskCacheHitWeight != 0.25 {
		t.Fatalf("defaults %+v", c)
	}
}
