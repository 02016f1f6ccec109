package workload

import (
	"math/rand/v2"
	"testing"

	"github.com/dynosim/dynosim-web/internal/idmap"
)

// TestItem34_1Intern checks the interner against the hash table it
// replaces (idmap.GetOrPut with the next number), key by key: dense
// first-seen ids as Mooncake writes them, repeats, keys on both sides of
// denseMax, huge keys, and a first key that sizes the slice at once.
func TestItem34_1Intern(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 4))
	var seq, dense, mixed, edge []uint64
	for i := range 50_000 {
		seq = append(seq, uint64(i), uint64(rng.IntN(i+1)))
		dense = append(dense, uint64(rng.IntN(200_000)))
		switch rng.IntN(3) {
		case 0:
			mixed = append(mixed, uint64(rng.IntN(1000)))
		case 1:
			mixed = append(mixed, rng.Uint64())
		default:
			mixed = append(mixed, denseMax-50+uint64(rng.IntN(100)))
		}
	}
	edge = []uint64{denseMax - 1, 0, denseMax, 1 << 63, denseMax - 1, 5, denseMax, ^uint64(0), 0, 1023, 1024, 1025, 1023}
	for _, tc := range []struct {
		name string
		keys []uint64
	}{{"first_seen", seq}, {"dense_random", dense}, {"mixed", mixed}, {"edges", edge}} {
		t.Run(tc.name, func(t *testing.T) {
			var in interner
			ref := idmap.New(0)
			for i, v := range tc.keys {
				want, _ := ref.GetOrPut(v, int32(ref.Len()))
				if got := in.id(v); got != uint32(want) {
					t.Fatalf("key %d (%d): id %d, the table gives %d", i, v, got, want)
				}
				if in.Len() != ref.Len() {
					t.Fatalf("key %d: %d numbered, the table %d", i, in.Len(), ref.Len())
				}
			}
		})
	}
}
