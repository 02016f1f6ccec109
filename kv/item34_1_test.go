package kv

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/zeebo/xxh3"
)

// TestItem34_1ChainHash: the written-out ChainHash equals XXH3-64 with
// seed Seed of the 16 little-endian bytes, as it was computed before.
func TestItem34_1ChainHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 1))
	pairs := [][2]uint64{{0, 0}, {^uint64(0), ^uint64(0)}, {1, 0}, {0, 1}, {Seed, Seed}}
	for range 100000 {
		pairs = append(pairs, [2]uint64{rng.Uint64(), rng.Uint64()})
	}
	for _, p := range pairs {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], p[0])
		binary.LittleEndian.PutUint64(b[8:], p[1])
		if got, want := ChainHash(p[0], p[1]), xxh3.HashSeed(b[:], Seed); got != want {
			t.Fatalf("ChainHash(%x, %x) = %x, want %x", p[0], p[1], got, want)
		}
	}
}

// TestItem34_1RunMemo: RunMemo.Local equals LocalHash for runs (one token
// repeated) met again, after other runs, at other lengths, and for blocks
// that are almost runs (one token differs at the start, middle or end);
// a Hasher fed a trace-like prompt emits what hashing every block anew does.
func TestItem34_1RunMemo(t *testing.T) {
	run := func(tok uint32, n int) []uint32 {
		b := make([]uint32, n)
		for i := range b {
			b[i] = tok
		}
		return b
	}
	almost := func(tok uint32, n, at int) []uint32 {
		b := run(tok, n)
		b[at] = tok + 1
		return b
	}
	blocks := [][]uint32{
		run(7, 64), run(7, 64), run(7, 16), run(7, 64), run(9, 64), run(7, 64),
		almost(7, 64, 0), almost(7, 64, 31), almost(7, 64, 63), run(7, 64),
		{5}, {5}, run(5, 2), {}, run(0, 64), run(1<<31, 64), run(1<<31, 64),
	}
	var m RunMemo
	for i, b := range blocks {
		if got, want := m.Local(b), LocalHash(b); got != want {
			t.Fatalf("block %d (%d tokens): %x, want %x", i, len(b), got, want)
		}
	}

	var prompt []uint32 // trace blocks of 48 tokens (not a multiple of 16), ids repeating
	for _, id := range []uint32{3, 3, 8, 3, 11, 11, 11, 2} {
		prompt = append(prompt, run(id, 48)...)
	}
	prompt = append(prompt, run(4, 21)...)
	for _, bs := range []int{1, 16, 32, 64} {
		h := Hasher{BlockSize: bs}
		var got [][2]uint64
		h.Add(prompt[:50], func(l, s uint64) { got = append(got, [2]uint64{l, s}) })
		h.Add(prompt[50:], func(l, s uint64) { got = append(got, [2]uint64{l, s}) })
		var last uint64
		for i := 0; i+bs <= len(prompt); i += bs {
			l := LocalHash(prompt[i : i+bs])
			s := l
			if i > 0 {
				s = ChainHash(last, l)
			}
			last = s
			if k := i / bs; k >= len(got) || got[k] != [2]uint64{l, s} {
				t.Fatalf("block size %d, block %d: got %v, want %x %x", bs, k, got, l, s)
			}
		}
		if len(got) != len(prompt)/bs {
			t.Fatalf("block size %d: %d blocks, want %d", bs, len(got), len(prompt)/bs)
		}
	}
}
