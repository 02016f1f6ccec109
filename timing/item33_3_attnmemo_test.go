package timing

import (
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/timing/kernels"
	"github.com/dynosim/dynosim-web/timing/kernels/kerneldata"
)

// TestItem33_3AttnMemo: a table-priced DecodeMs through the attention memo
// (decodememo.go attnMemo) returns bit for bit what the general path
// gemm + attention + overheads returns, on the generation grid of every
// model below in each of the 18 tables (dense and MoE, GQA layouts of 8,
// 4 and 2 KV heads a GPU, BF16 and FP8 KV): batches 1-3 (memoised) and 4
// (not), context lengths inside, between and past every grid's measured
// lengths, on the slices' growth boundaries and the memo's limit, first
// ascending, then again descending (hits), then at once from a cold memo
// high up (a slice sized in one step); and after the Roofline is rebound
// to another engine's table (the memo must not answer with the first
// table's prices: here the same table with its generation latencies
// doubled).
func TestItem33_3AttnMemo(t *testing.T) {
	models := []struct {
		model, dtype, kv string
		tp               int
	}{
		{"llama-3.1-8b", "", "", 1},
		{"llama-3.1-8b", "fp8", "fp8", 1},
		{"qwen3-32b", "", "", 2},
		{"llama-3.1-70b", "", "", 4},
		{"qwen3-30b-a3b", "", "", 1},
	}
	var kvs []int
	for kv := 0; kv < 300; kv++ {
		kvs = append(kvs, kv)
	}
	for p := 9; p <= 18; p++ {
		for _, d := range []int{-3, -1, 0, 1, 77} {
			kvs = append(kvs, 1<<p+d)
		}
	}
	for kv := 300; kv < attnMemoMaxKV+5000; kv = kv*9/8 + 13 {
		kvs = append(kvs, kv)
	}
	for _, name := range kerneldata.Names() {
		bound := 0
		gpu, engine, _ := strings.Cut(strings.TrimSuffix(name, ".json.gz"), "-")
		// rebind: the same table with every generation latency doubled.
		tb, rebind := kernelTable(t, gpu, engine), kernelTable(t, gpu, engine)
		for _, g := range rebind.Generation {
			for _, row := range g.Rows {
				for i := range row.Ms {
					row.Ms[i] *= 2
				}
			}
		}
		for _, m := range models {
			spec := RooflineSpec{Model: m.model, Hardware: gpu, Engine: engine, DType: m.dtype, KVDType: m.kv, Parallelism: Parallelism{Tensor: m.tp}}
			r, err := NewRoofline(spec)
			if err != nil {
				continue // e.g. FP8 on a GPU without FP8 tensor cores
			}
			if err := r.UseKernelTable(tb); err != nil {
				t.Fatalf("%s %+v: %v", name, spec, err)
			}
			if r.kt.gen == nil {
				continue
			}
			bound++
			what := name + " " + m.model + " " + m.dtype
			check := func(r *Roofline, tb *kernels.Table, order []int) {
				t.Helper()
				for _, kv := range order {
					for b := 1; b <= attnMemoBatches+1; b++ {
						bf, kf := float64(b), float64(kv)
						want := r.gemmMs(bf, bf) + r.attention(kf, kf, bf, kf/bf, true) + r.overheads(bf, bf, b <= cudaGraphMaxBatch)
						if got := r.DecodeMs(b, kv, kv, kv); got != want {
							t.Fatalf("%s (%s): DecodeMs(%d, %d) = %v, want %v", what, tb.Label(), b, kv, got, want)
						}
					}
				}
			}
			rev := make([]int, len(kvs))
			for i, kv := range kvs {
				rev[len(kvs)-1-i] = kv
			}
			check(r, tb, kvs)
			check(r, tb, rev)
			if err := r.UseKernelTable(rebind); err != nil {
				t.Fatal(err)
			}
			check(r, rebind, rev)
			cold, _ := NewRoofline(spec)
			if err := cold.UseKernelTable(tb); err != nil {
				t.Fatal(err)
			}
			check(cold, tb, rev)
		}
		if bound < 2 {
			t.Errorf("%s: %d of the models bind a generation grid, want ≥ 2", name, bound)
		}
	}
}
