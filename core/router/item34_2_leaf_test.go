package router

import (
	"testing"

	"github.com/dynosim/dynosim-web/internal/idmap"
)

// refTree is the active tree as it was before R6 (b4aefd3): a sequence is
// released by its hashes, one lookup per segment on its path, and a split
// keeps the head under the old index. TestItem34_2ActiveTreeLeaf checks
// the leaf-released tree against it.
type refTree struct {
	first idmap.Map
	segs  []refSeg
	free  []int32
	held  int
}

type refSeg struct {
	hashes []uint64
	count  int32
}

func (t *refTree) seg(h uint64) int32 {
	if s, ok := t.first.Get(h); ok {
		return s
	}
	return -1
}

func (t *refTree) prefix(hashes []uint64) int {
	i := 0
	for i < len(hashes) {
		s := t.seg(hashes[i])
		if s < 0 {
			return i
		}
		run := t.segs[s].hashes
		j := 1
		for i++; j < len(run) && i < len(hashes) && run[j] == hashes[i]; i, j = i+1, j+1 {
		}
		if j < len(run) {
			return i
		}
	}
	return i
}

func (t *refTree) hold(hashes []uint64) {
	i := 0
	for i < len(hashes) {
		s := t.seg(hashes[i])
		if s < 0 {
			break
		}
		run := t.segs[s].hashes
		j := 1
		for i++; j < len(run) && i < len(hashes) && run[j] == hashes[i]; i, j = i+1, j+1 {
		}
		if j < len(run) {
			t.segs[s].hashes = run[:j:j]
			t.add(run[j:], t.segs[s].count)
		}
		t.segs[s].count++
		if j < len(run) {
			break
		}
	}
	if i < len(hashes) {
		t.add(append([]uint64(nil), hashes[i:]...), 1)
		t.held += len(hashes) - i
	}
}

func (t *refTree) release(hashes []uint64) {
	for i := 0; i < len(hashes); {
		s := t.seg(hashes[i])
		if s < 0 {
			return
		}
		sg := &t.segs[s]
		n := len(sg.hashes)
		if sg.count--; sg.count == 0 {
			t.first.Delete(hashes[i])
			t.held -= n
			sg.hashes = nil
			t.free = append(t.free, s)
		}
		i += n
	}
}

func (t *refTree) add(run []uint64, count int32) {
	var s int32
	if n := len(t.free); n > 0 {
		s, t.free = t.free[n-1], t.free[:n-1]
		t.segs[s] = refSeg{run, count}
	} else {
		s = int32(len(t.segs))
		t.segs = append(t.segs, refSeg{run, count})
	}
	t.first.Put(run[0], s)
}

// runLeafOps holds and releases chained sequences drawn from a small trie
// (each byte picks the next block among width; op bytes pick hold or
// release and the length) in both trees, and after every step compares
// their held counts and the prefix of every held sequence, of every
// sequence released so far and of probes; it also checks every held
// sequence's leaf is a live segment ending with the sequence's last hash.
func runLeafOps(tb testing.TB, data []byte, width byte) {
	var t activeTree
	var ref refTree
	type seq struct {
		hashes []uint64
		leaf   int32
	}
	var held, gone []seq
	chain := func(d []byte) []uint64 {
		var s []uint64
		h := uint64(0)
		for _, b := range d {
			h = h*0x100000001b3 + uint64(b%width) + 1
			s = append(s, h)
		}
		return s
	}
	for len(data) >= 2 {
		op, n := data[0], int(data[1]%12)
		data = data[2:]
		if op%3 == 0 && len(held) > 0 {
			i := int(op/3) % len(held)
			t.release(held[i].leaf)
			ref.release(held[i].hashes)
			gone = append(gone, held[i])
			held = append(held[:i], held[i+1:]...)
		} else {
			s := chain(data[:min(n, len(data))])
			held = append(held, seq{s, t.hold(s)})
			ref.hold(s)
		}
		if t.held != ref.held {
			tb.Fatalf("held %d, old tree %d", t.held, ref.held)
		}
		probes := [][]uint64{chain(data[:min(8, len(data))]), chain([]byte{0, 1, 2, 0}), chain([]byte{1, 1})}
		for _, s := range append(append([]seq(nil), held...), gone...) {
			probes = append(probes, s.hashes)
		}
		for _, p := range probes {
			if got, want := t.prefix(p), ref.prefix(p); got != want {
				tb.Fatalf("prefix %d, old tree %d", got, want)
			}
		}
		for _, s := range held {
			if len(s.hashes) == 0 {
				if s.leaf != -1 {
					tb.Fatalf("empty sequence: leaf %d", s.leaf)
				}
				continue
			}
			sg := t.segs[s.leaf]
			if sg.count == 0 || sg.hashes[len(sg.hashes)-1] != s.hashes[len(s.hashes)-1] {
				tb.Fatalf("leaf %d (count %d) does not end the sequence", s.leaf, sg.count)
			}
		}
	}
}

// TestItem34_2ActiveTreeLeaf: releasing by leaf leaves the tree answering
// as the old release by hashes does, on op streams over narrow and wide
// tries (narrow: most holds split a segment).
func TestItem34_2ActiveTreeLeaf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		seed  uint64
		ops   int
		width byte
	}{
		{"narrow short", 1, 60, 2},
		{"narrow long", 2, 4000, 2},
		{"wide long", 3, 4000, 5},
		{"single path", 4, 2000, 1},
	} {
		t.Run(tc.name, func(t *testing.T) { runLeafOps(t, randomBytes(tc.seed, 2*tc.ops), tc.width) })
	}
}

func FuzzItem34_2ActiveTreeLeaf(f *testing.F) {
	f.Add([]byte{1, 4, 0, 1, 1, 0, 1, 2, 1, 1, 0, 0, 3, 0}, byte(2))
	f.Add([]byte{1, 8, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 1, 1, 1, 0, 0, 0, 3, 3}, byte(3))
	f.Fuzz(func(t *testing.T, data []byte, width byte) { runLeafOps(t, data, max(width%6, 1)) })
}

// TestItem34_2ReleaseAfterRemove: a sequence held on a worker that was
// removed is not released from the worker's next tree, whatever its leaf
// names there; one held before is released from its own.
func TestItem34_2ReleaseAfterRemove(t *testing.T) {
	h := []uint64{11, 12, 13}
	for _, tc := range []struct {
		name   string
		remove bool
		want   int // blocks held after the release
	}{
		{"same tree", false, 0},
		{"worker removed", true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := NewIndexer(16)
			old := ix.Hold(0, 0, h)
			if tc.remove {
				ix.RemoveWorker(0)
				ix.Hold(0, 0, h) // the same leaf index in the next tree
			}
			ix.Release(0, 0, old)
			if got := ix.Held(0, 0); got != tc.want {
				t.Fatalf("held %d after release, want %d", got, tc.want)
			}
			ix.Release(0, 0, HeldSeq{}) // the zero value releases nothing
			if got := ix.Held(0, 0); got != tc.want {
				t.Fatalf("held %d after a zero release, want %d", got, tc.want)
			}
			ix.grow(1, 0) // a rank whose tree never held anything (epoch 0)
			ix.Release(1, 0, HeldSeq{})
			if got := ix.Held(1, 0); got != 0 {
				t.Fatalf("held %d on a fresh rank after a zero release", got)
			}
		})
	}
}
