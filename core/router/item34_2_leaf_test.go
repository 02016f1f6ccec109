package router

import "testing"

// refTree is a model of the active tree, not a copy of it: how many held
// sequences hold each hash. The hashes chain (a hash names its whole
// prefix), so the tree holds one block per hash held at least once, and a
// sequence's held prefix ends at its first hash no sequence holds.
type refTree map[uint64]int

func (t refTree) hold(hashes []uint64) {
	for _, h := range hashes {
		t[h]++
	}
}

func (t refTree) release(hashes []uint64) {
	for _, h := range hashes {
		if t[h]--; t[h] == 0 {
			delete(t, h)
		}
	}
}

func (t refTree) prefix(hashes []uint64) int {
	for i, h := range hashes {
		if t[h] == 0 {
			return i
		}
	}
	return len(hashes)
}

// runLeafOps holds and releases chained sequences drawn from a small trie
// (each byte picks the next block among width; op bytes pick hold or
// release and the length) in both trees, and after every step compares
// their held counts and the prefix of every held sequence, of every
// sequence released so far and of probes; it also checks every held
// sequence's leaf is a live segment ending with the sequence's last hash.
func runLeafOps(tb testing.TB, data []byte, width byte) {
	var t activeTree
	ref := refTree{}
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
		if t.held != len(ref) {
			tb.Fatalf("held %d, want %d", t.held, len(ref))
		}
		probes := [][]uint64{chain(data[:min(8, len(data))]), chain([]byte{0, 1, 2, 0}), chain([]byte{1, 1})}
		for _, s := range append(append([]seq(nil), held...), gone...) {
			probes = append(probes, s.hashes)
		}
		for _, p := range probes {
			if got, want := t.prefix(p), ref.prefix(p); got != want {
				tb.Fatalf("prefix %d, want %d", got, want)
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

// TestItem34_2ActiveTreeLeaf: releasing by leaf leaves the tree holding
// what its held sequences hold (refTree), on op streams over narrow and wide
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
