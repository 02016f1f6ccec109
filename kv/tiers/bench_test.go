package tiers

import (
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// BenchmarkOffloadThroughG3 is the steady state of a G1 too small for its
// workload: every block it evicts is copied to a full G2 (4,000 blocks) and
// written through to a full G3 (100,000), each evicting its oldest block.
// ns/op is per offloaded block.
func BenchmarkOffloadThroughG3(b *testing.B) {
	s := New(Config{Settings: Settings{BlockSize: 64, BytesPerToken: 131072, BatchBlocks: 32, G2Blocks: 4000, G3Blocks: 100000,
		G1ToG2: 14, G2ToG1: 14, G2ToG3: 7, G3ToG2: 7}, BlockBytes: 64 * 131072})
	w := s.Join(nil)
	now := timing.Time(0)
	h := uint64(0x9E3779B97F4A7C15)
	b.ResetTimer()
	for i := range b.N {
		h = h*6364136223846793005 + 1442695040888963407
		w.Offload(h, int32(i&1023))
		if i&31 == 31 {
			w.Flush()
			now += timing.FromMs(100) // every copy has landed
			w.Tick(now)
			w.Freed()
		}
	}
}

// BenchmarkStoreThroughG3 is write-through's steady state on the tiers
// benchmark's shape: every block G1 stores is new, placed in a full G2
// (4,000 blocks) at the pass's Flush, and on landing written on to a full
// G3 (100,000), each evicting its oldest block; G1 evicts a block stored
// long ago (its G2 copy gone or landed). ns/op is per stored block.
func BenchmarkStoreThroughG3(b *testing.B) {
	s := New(Config{Settings: Settings{BlockSize: 64, BytesPerToken: 131072, BatchBlocks: 32, G2Blocks: 4000, G3Blocks: 100000,
		G1ToG2: 14, G2ToG1: 14, G2ToG3: 7, G3ToG2: 7, WriteThrough: true}, BlockBytes: 64 * 131072})
	w := s.Join(nil)
	now := timing.Time(0)
	h := uint64(0x9E3779B97F4A7C15)
	b.ResetTimer()
	for i := range b.N {
		h = h*6364136223846793005 + 1442695040888963407
		w.Store(h, int32(i&4095))
		if i&63 == 63 {
			w.Flush()
			now += timing.FromMs(100) // every copy has landed
			w.Tick(now)
			w.Freed()
			for k := range 64 {
				w.Offload(0, int32((i+k)&4095))
			}
		}
	}
}
