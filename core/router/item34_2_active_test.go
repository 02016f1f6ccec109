package router

import (
	"math/rand/v2"
	"testing"
)

// TestItem34_2ActiveSlots: the KV router's active sequences, kept in a
// slice indexed by an idmap since R6, answer as the Go map of pointers
// they replace (the reference here) through random placements (some of an
// id already active), prefill completions and finishes.
func TestItem34_2ActiveSlots(t *testing.T) {
	for _, tc := range []struct {
		name      string
		seed      uint64
		ops, ids  int
		replaceOK bool // an active id may be placed again
	}{
		{"few ids", 1, 2000, 8, true},
		{"many ids", 2, 5000, 300, true},
		{"fresh ids only", 3, 3000, 50, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewKV(KVConfig{BlockSize: 16, UseEvents: true})
			if err != nil {
				t.Fatal(err)
			}
			ref := map[uint64]*activeSeq{}
			rng := rand.New(rand.NewPCG(tc.seed, 0))
			for op := range tc.ops {
				id := uint64(rng.IntN(tc.ids))
				switch rng.IntN(3) {
				case 0: // place
					if ref[id] != nil && !tc.replaceOK {
						continue
					}
					s := activeSeq{worker: rng.IntN(4), rank: 0, prefill: 1 + rng.IntN(1000)}
					*r.newActive(id) = s
					r.rank(s.worker, 0).prefill += s.prefill
					r.rank(s.worker, 0).requests++
					ref[id] = &s
				case 1: // prefill done
					r.PrefillDone(id, 0)
					if a := ref[id]; a != nil {
						a.prefill = 0
					}
				case 2: // finished
					r.Finished(id, 0)
					delete(ref, id)
				}
				for id := range uint64(tc.ids) {
					got, want := r.activeOf(id), ref[id]
					if (got == nil) != (want == nil) {
						t.Fatalf("op %d: id %d active %v, reference %v", op, id, got != nil, want != nil)
					}
					if got != nil && (got.worker != want.worker || got.prefill != want.prefill) {
						t.Fatalf("op %d: id %d is %+v, reference %+v", op, id, *got, *want)
					}
				}
				if r.active.Len() != len(ref) || len(r.seqs)-len(r.free) != len(ref) {
					t.Fatalf("op %d: %d ids, %d slots in use, reference %d", op, r.active.Len(), len(r.seqs)-len(r.free), len(ref))
				}
			}
		})
	}
}
