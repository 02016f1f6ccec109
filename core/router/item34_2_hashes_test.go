package router

import (
	"slices"
	"testing"

	"github.com/dynosim/dynosim-web/kv"
)

// TestItem34_2HashesLocals: HashesLocals appends what Hashes does and each
// block's kv.LocalHash beside it (what the engine takes through
// PromptHashes), for prompts with and without runs of one token.
func TestItem34_2HashesLocals(t *testing.T) {
	for _, bs := range []int{1, 4, 64} {
		ix := NewIndexer(bs)
		for _, n := range []int{0, bs - 1, bs, 3*bs + 1, 9 * bs} {
			for _, runs := range []bool{false, true} {
				prompt := make([]uint32, n)
				for i := range prompt {
					prompt[i] = uint32(i)
					if runs {
						prompt[i] = uint32(i / (2 * bs))
					}
				}
				want := ix.Hashes(prompt, nil)
				h, l := ix.HashesLocals(prompt, 0, []uint64{7}, []uint64{})
				if !slices.Equal(h[1:], want) || h[0] != 7 || len(l) != len(want) {
					t.Fatalf("bs %d, n %d: hashes %v, want 7 then %v; %d locals", bs, n, h, want, len(l))
				}
				for i := range l {
					if w := kv.LocalHash(prompt[i*bs : (i+1)*bs]); l[i] != w {
						t.Fatalf("bs %d, n %d, block %d: local %x, want %x", bs, n, i, l[i], w)
					}
				}
			}
		}
	}
}

// TestItem34_2HashesRunLen: with a run length (Request.RunLen) HashesLocals
// gives the hashes and local hashes it gives without one, on prompts built
// as trace prompts are (each id repeated over an aligned run, the last run
// cut short, neighbouring runs sometimes of the same id), for block sizes
// that divide the run length, are larger, or straddle runs.
func TestItem34_2HashesRunLen(t *testing.T) {
	for _, bs := range []int{1, 3, 4, 64} {
		ix := NewIndexer(bs)
		for _, runLen := range []int{1, 2, 4, 5, 8, 64, 100, 512} {
			for _, n := range []int{0, bs - 1, bs, 3*bs + 1, 2 * runLen, 9*bs + runLen/2, 1000} {
				prompt := make([]uint32, n)
				id := func(k int) uint32 { return uint32(k/2*3 + k%2) } // run k's id: 0 1 3 4 6 7 ...
				for i := range prompt {
					k := i / runLen
					prompt[i] = id(k)
					if k%5 == 4 {
						prompt[i] = id(k - 1) // the run before's id again
					}
				}
				want, wantL := ix.HashesLocals(prompt, 0, nil, []uint64{})
				got, gotL := ix.HashesLocals(prompt, runLen, []uint64{7}, []uint64{})
				if !slices.Equal(got[1:], want) || got[0] != 7 || !slices.Equal(gotL, wantL) {
					t.Fatalf("bs %d, run %d, n %d: hashes %x locals %x, want 7 then %x, %x", bs, runLen, n, got, gotL, want, wantL)
				}
				for i := range gotL {
					if w := kv.LocalHash(prompt[i*bs : (i+1)*bs]); gotL[i] != w {
						t.Fatalf("bs %d, run %d, n %d, block %d: local %x, want %x", bs, runLen, n, i, gotL[i], w)
					}
				}
			}
		}
	}
}
