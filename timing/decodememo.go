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
}

// decodeParts returns gemm(b, b) and overheads(b, b, graph) for batch.
func (r *Roofline) decodeParts(batch int, b float64) (gemm, over float64) {
	dm := r.decode
	// UseKernelTable rebinds the tables: that empties the memo.
	if dm == nil || dm.kt != r.kt {
		dm = &decodeMemo{kt: r.kt}
		r.decode = dm
	}
	e := &dm.entries[batch&(decodeMemoSize-1)]
	if e.batch != batch {
		*e = decodeEntry{batch, r.gemm(b, b), r.overheads(b, b, b <= cudaGraphMaxBatch)}
	}
	return e.gemm, e.over
}

// decodeAttention is attention(kv, kv, b, kv/b, true).
func (r *Roofline) decodeAttention(kv, b float64) float64 {
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
