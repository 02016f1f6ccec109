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
				h, l := ix.HashesLocals(prompt, []uint64{7}, []uint64{})
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
