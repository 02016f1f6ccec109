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
func BenchmarkAllocateRelease(b *testing.B) { benchAllocateRelease(b, NewPool(4096)) }

// BenchmarkAllocateReleaseLineage is BenchmarkAllocateRelease on the KVBM
// lineage pool.
func BenchmarkAllocateReleaseLineage(b *testing.B) { benchAllocateRelease(b, NewLineagePool(4096)) }

const benchBlock = 64

// benchManager returns a caching manager over pool with 64-token blocks and
// a 32-block sequence whose sequence and local hashes are 1, 2, ….
func benchManager(pool BlockPool, log *EventLog) (m *Manager, seq, local []uint64) {
	seq, local = make([]uint64, 32), make([]uint64, 32)
	for i := range seq {
		seq[i], local[i] = uint64(i+1), uint64(i+1)
	}
	return NewManagerWith(pool, benchBlock, true, log), seq, local
}

// benchRequest is one request over seq: a prefix match, the allocation of
// every block, their finalization and the release.
func benchRequest(b *testing.B, m *Manager, seq, local []uint64) {
	var l Lease
	overlap, _ := m.Match(seq)
	if !m.Allocate(&l, len(seq)*benchBlock, overlap, seq) {
		b.Fatal("allocate")
	}
	m.Finalize(&l, overlap*benchBlock, len(seq)*benchBlock, seq, local)
	m.Release(&l)
}

func benchAllocateRelease(b *testing.B, pool BlockPool) {
	m, seq, local := benchManager(pool, nil)
	benchRequest(b, m, seq[:16], local[:16]) // warm: the prefix is cached
	for b.Loop() {
		benchRequest(b, m, seq, local)
	}
}

// BenchmarkChurn is a request lifecycle on a full pool with events on: a
// 16-block shared prefix hit and 16 blocks of a new suffix, which evict the
// previous suffixes (Removed events) and become visible (Stored events).
func BenchmarkChurn(b *testing.B) { benchChurn(b, NewPool(64)) }

// BenchmarkChurnLineage is BenchmarkChurn on the KVBM lineage pool.
func BenchmarkChurnLineage(b *testing.B) { benchChurn(b, NewLineagePool(64)) }

func benchChurn(b *testing.B, pool BlockPool) {
	log := &EventLog{}
	m, seq, local := benchManager(pool, log)
	next := uint64(len(seq))
	for b.Loop() {
		for i := 16; i < len(seq); i++ {
			next++
			seq[i], local[i] = next, next
		}
		benchRequest(b, m, seq, local)
		log.Events = log.Events[:0]
	}
}
