package kv

import "testing"

func BenchmarkLocalHash64(b *testing.B) {
	toks := make([]uint32, 64)
	for i := range toks {
		toks[i] = uint32(i * 7919)
	}
	b.SetBytes(4 * 64)
	for b.Loop() {
		LocalHash(toks)
	}
}

// BenchmarkAllocateRelease is one request's lifecycle on a warm pool: a
// 16-block prefix hit, 16 fresh blocks, finalization and release.
func BenchmarkAllocateRelease(b *testing.B) {
	const bs = 64
	m := NewManager(4096, bs, true, nil)
	seq := make([]uint64, 32)
	local := make([]uint64, 32)
	for i := range seq {
		seq[i], local[i] = uint64(i+1), uint64(i+1)
	}
	var warm Lease
	m.Allocate(&warm, 16*bs, 0, seq)
	m.Finalize(&warm, 0, 16*bs, seq, local)
	m.Release(&warm)
	for b.Loop() {
		var l Lease
		overlap, _ := m.Match(seq)
		if !m.Allocate(&l, 32*bs, overlap, seq) {
			b.Fatal("allocate")
		}
		m.Finalize(&l, overlap*bs, 32*bs, seq, local)
		m.Release(&l)
	}
}
