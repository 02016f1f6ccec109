package timing

// A decode pass is priced as gemm(b, b) + attention(kv) + overheads(b):
// of the three only attention depends on the context held, and a replay
// asks for the same batch sizes pass after pass (issue 34 item 1: 2.5 M
// decode passes on the whole conversation trace, ~320 instructions each,
// 9 % of the default-timing replay). decodeMemo keeps the batch-only
// parts per batch size and the attention of the common case (no kernel
// table, no MLA) is computed from fields read in place instead of copies
// of ModelSpec, GPUSpec and Curves. Both give the same float64 as the
// general path: the same operations in the same order, summed left to
// right as DecodeMs always did (TestItem34_1DecodeMemo).

const decodeMemoSize = 1024 // a power of two; batches above it share slots

type decodeEntry struct {
	batch      int // 0: empty
	gemm, over float64
}

type decodeMemo struct {
	kt      *kernelTables // the tables the entries were priced with
	entries [decodeMemoSize]decodeEntry
	// attn[b-1][kv/attnChunk][kv%attnChunk]: a table-priced decode
	// pass's attention at batch b and kv context tokens, 0 while not yet
	// priced (attnMemo); a chunk is allocated when first asked for.
	attn [attnMemoBatches][attnMemoMaxKV / attnChunk]*[attnChunk]float64
}

// Generation attention from a kernel table (kernels.Gen.Ms: five grid
// points a pass) is a pure function of (batch, context tokens), and a
// replay asks for the same pairs again and again at small batches: on the
// conversation trace 2.4 M decode passes, 86 % at batches 1-3, hold
// 0.23 M distinct pairs there (batch 1: 1.32 M passes, 57 k distinct
// lengths; the replicas' sequences walk the same lengths). attn keeps
// them densely, per batch, in chunks of attnChunk lengths allocated as a
// replay reaches them (no copying as it grows; 8 bytes a length, at most
// attnMemoBatches × 2 MiB a Roofline).
const (
	attnMemoBatches = 3
	attnMemoMaxKV   = 1 << 18
	attnChunk       = 1 << 12
)

// currentMemo returns r's decode memo, emptied when the kernel tables changed
// (UseKernelTable rebinds them).
func (r *Roofline) currentMemo() *decodeMemo {
	if dm := r.decode; dm != nil && dm.kt == r.kt {
		return dm
	}
	r.decode = &decodeMemo{kt: r.kt}
	return r.decode
}

// decodeParts returns gemm(b, b) and overheads(b, b, graph) for batch.
func (r *Roofline) decodeParts(batch int, b float64) (gemm, over float64) {
	dm := r.currentMemo()
	e := &dm.entries[batch&(decodeMemoSize-1)]
	if e.batch != batch {
		*e = decodeEntry{batch, r.gemm(b, b), r.overheads(b, b, b <= cudaGraphMaxBatch)}
	}
	return e.gemm, e.over
}

// decodeAttention is attention(kv, kv, b, kv/b, true), with b = batch
// and kv = activeKV (≥ 0).
func (r *Roofline) decodeAttention(kv, b float64, batch, activeKV int) float64 {
	if r.kt != nil && r.kt.gen != nil && batch <= attnMemoBatches && activeKV < attnMemoMaxKV {
		return r.attnMemo(kv, b, batch, activeKV)
	}
	if r.kt != nil || r.Model.KVLoraRank > 0 { // tables or MLA: the general path
		return r.attention(kv, kv, b, kv/b, true)
	}
	// attention's non-MLA decode branch with Curves.DecodeAttnMs inlined
	// (b ≥ 1 here, so its zero case never applies). The conversion keeps
	// the product rounded on its own: without it a compiler that fuses
	// multiply-adds (arm64) could fuse it into DecodeMs's sum once this
	// function is inlined there, which the general path never allowed.
	c := &r.curves
	layers := float64(r.Model.Layers)
	bytes := kv * r.kvPerToken / layers
	return float64(layers * (c.DecodeAttnFixedMs + max(b, 0)*c.DecodeAttnPerSeqMs + 1000*max(bytes, 0)/(c.KVReadBW*r.GPU.MemBW)))
}

// attnMemo is decodeAttention through attn: the value the general path
// returned for the same (batch, activeKV), bit for bit (a 0, never a
// table's price, is recomputed every time; TestItem33_3AttnMemo).
func (r *Roofline) attnMemo(kv, b float64, batch, activeKV int) float64 {
	c := &r.currentMemo().attn[batch-1][activeKV/attnChunk]
	if *c == nil {
		*c = new([attnChunk]float64)
	}
	v := &(*c)[activeKV%attnChunk]
	if *v == 0 {
		*v = r.attention(kv, kv, b, kv/b, true)
	}
	return *v
}
