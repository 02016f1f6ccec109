package main

import (
	"bytes"
	"fmt"
	"math"
	"sort"

	"github.com/dynosim/dynosim-web/timing/kernels"
	"github.com/parquet-go/parquet-go"
)

// table is a parquet file's rows with columns looked up by name.
type table struct {
	cols map[string]int
	rows []parquet.Row
}

func readParquet(b []byte) (*table, error) {
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	t := &table{cols: map[string]int{}}
	for i, c := range f.Schema().Columns() {
		t.cols[c[len(c)-1]] = i
	}
	r := parquet.NewReader(bytes.NewReader(b))
	defer r.Close()
	buf := make([]parquet.Row, 4096)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			t.rows = append(t.rows, row.Clone())
		}
		if err != nil {
			break
		}
	}
	if int64(len(t.rows)) != f.NumRows() {
		return nil, fmt.Errorf("read %d of %d rows", len(t.rows), f.NumRows())
	}
	return t, nil
}

func (t *table) str(row parquet.Row, col string) string {
	i, ok := t.cols[col]
	if !ok || row[i].IsNull() {
		return ""
	}
	return row[i].String()
}

// int returns a column's integer, 0 when the column is absent or null.
func (t *table) int(row parquet.Row, col string) int {
	i, ok := t.cols[col]
	if !ok || row[i].IsNull() {
		return 0
	}
	return int(row[i].Int64())
}

func (t *table) float(row parquet.Row, col string) float64 {
	return row[t.cols[col]].Double()
}

// dtypeOf maps AIC's dtype names to the tables' ("" = not used).
func dtypeOf(s string) string {
	switch s {
	case "bfloat16":
		return "bf16"
	case "fp8":
		return "fp8"
	}
	return ""
}

var dtypeNames = [2]string{"bf16", "fp8"}

func dtypeIndex(d string) int {
	if d == "fp8" {
		return 1
	}
	return 0
}

type site struct{ n, k int }

// curve is one measured m-curve, first row wins (as AIC's loader).
type curve map[float64]float64

func (c curve) series(dtype string, s site, kind string) kernels.GEMM {
	g := kernels.GEMM{DType: dtype, N: s.n, K: s.k, Site: kind}
	for m := range c {
		g.M = append(g.M, m)
	}
	sort.Float64s(g.M)
	for _, m := range g.M {
		g.Lat = append(g.Lat, c[m])
	}
	return g
}

func compileGEMM(b []byte, sh shapes, peak kernels.Peak) ([]kernels.GEMM, error) {
	t, err := readParquet(b)
	if err != nil {
		return nil, err
	}
	sites := map[string]map[site]curve{}
	for _, row := range t.rows {
		d := dtypeOf(t.str(row, "gemm_dtype"))
		if d == "" {
			continue
		}
		if sites[d] == nil {
			sites[d] = map[site]curve{}
		}
		s := site{t.int(row, "n"), t.int(row, "k")}
		c := sites[d][s]
		if c == nil {
			c = curve{}
			sites[d][s] = c
		}
		m := float64(t.int(row, "m"))
		if _, dup := c[m]; !dup {
			c[m] = t.float(row, "latency")
			if sh.gemm[[3]int{dtypeIndex(d), s.n, s.k}] {
				samples.add("gemm", fmt.Sprintf("%s,%d,%d,%d,0,0,0,0", d, s.n, s.k, int(m)), c[m])
			}
		}
	}
	// Raise every measured point below AIC's speed of light to it, as
	// AIC's loader does before it resolves anything (kernels.GEMM.AICSOL),
	// so the transfer below sees the utilisations AIC sees.
	for d, bySite := range sites {
		for s, c := range bySite {
			g := kernels.GEMM{DType: d, N: s.n, K: s.k}
			for m, lat := range c {
				c[m] = max(lat, g.AICSOL(m, peak))
			}
		}
	}
	var out []kernels.GEMM
	for _, key := range sortedKeys(sh.gemm) {
		d, s := dtypeNames[key[0]], site{key[1], key[2]}
		if c, ok := sites[d][s]; ok {
			out = append(out, c.series(d, s, "measured"))
			continue
		}
		if g, ok := transfer(sites[d], d, s, peak); ok {
			out = append(out, g)
		}
	}
	return out, nil
}

// transfer builds the m-curve of an uncollected (n, k) as AIC's scattered
// site resolver does: at each m, the utilisation (speed of light over
// latency) of the at most four nearest collected sites that cover m,
// within two octaves in log2(n), log2(k), weighted by 1/distance², times
// the query's own speed of light.
func transfer(sites map[site]curve, dtype string, q site, peak kernels.Peak) (kernels.GEMM, bool) {
	type cand struct {
		d float64
		s site
		g kernels.GEMM
	}
	var cands []cand
	for s, c := range sites {
		d := math.Hypot(math.Log2(float64(s.n))-math.Log2(float64(q.n)), math.Log2(float64(s.k))-math.Log2(float64(q.k)))
		if d <= 2 {
			cands = append(cands, cand{d, s, c.series(dtype, s, "measured")})
		}
	}
	if len(cands) == 0 {
		return kernels.GEMM{}, false
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].d != cands[j].d {
			return cands[i].d < cands[j].d
		}
		if cands[i].s.n != cands[j].s.n {
			return cands[i].s.n < cands[j].s.n
		}
		return cands[i].s.k < cands[j].s.k
	})
	ms := map[float64]bool{}
	for _, c := range cands[:min(4, len(cands))] {
		for _, m := range c.g.M {
			ms[m] = true
		}
	}
	out := kernels.GEMM{DType: dtype, N: q.n, K: q.k, Site: "transferred"}
	for m := range ms {
		out.M = append(out.M, m)
	}
	sort.Float64s(out.M)
	for _, m := range out.M {
		var wsum, usum float64
		n := 0
		for _, c := range cands {
			if n == 4 {
				break
			}
			if m < c.g.M[0] || m > c.g.M[len(c.g.M)-1] {
				continue // AIC: only sites whose curve covers m
			}
			n++
			w := 1 / (c.d*c.d + 1e-12)
			usum += w * c.g.SOL(m, peak) / c.g.Ms(m, peak)
			wsum += w
		}
		if wsum == 0 {
			return kernels.GEMM{}, false
		}
		out.Lat = append(out.Lat, out.SOL(m, peak)/(usum/wsum))
	}
	return out, true
}

// compileAttention keeps the bf16-attention, full-window, beam-1 rows of
// the catalog's head layouts. Context rows are keyed by sequence length
// (cached prefix 0) over batch; generation rows by batch over the KV
// length (AIC's isl + step).
func compileAttention(b []byte, sh shapes, gen bool) ([]kernels.Context, []kernels.Gen, error) {
	t, err := readParquet(b)
	if err != nil {
		return nil, nil, err
	}
	type key struct {
		h, kv, hd int
		kvd       string
	}
	grids := map[key]map[float64]map[float64]float64{}
	for _, row := range t.rows {
		if t.str(row, "attn_dtype") != "bfloat16" || t.int(row, "window_size") != 0 || t.int(row, "beam_width") > 1 {
			continue
		}
		kvd := dtypeOf(t.str(row, "kv_cache_dtype"))
		h, kv, hd := t.int(row, "num_heads"), t.int(row, "num_key_value_heads"), t.int(row, "head_dim")
		if kv == 0 {
			kv = h // AIC's MHA sentinel
		}
		if kvd == "" || !sh.attn[[3]int{h, kv, hd}] {
			continue
		}
		var r, x float64
		if gen {
			r, x = float64(t.int(row, "batch_size")), float64(t.int(row, "isl")+t.int(row, "step"))
		} else {
			if t.int(row, "step") != 0 {
				continue
			}
			r, x = float64(t.int(row, "isl")), float64(t.int(row, "batch_size"))
		}
		k := key{h, kv, hd, kvd}
		if grids[k] == nil {
			grids[k] = map[float64]map[float64]float64{}
		}
		if grids[k][r] == nil {
			grids[k][r] = map[float64]float64{}
		}
		if _, dup := grids[k][r][x]; !dup {
			grids[k][r][x] = t.float(row, "latency")
			kind := "context"
			if gen {
				kind = "generation"
			}
			samples.add(kind, fmt.Sprintf("%s,%d,%d,%d,%g,%g,0,0", kvd, h, kv, hd, r, x), grids[k][r][x])
		}
	}
	keys := make([]key, 0, len(grids))
	for k := range grids {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.h != b.h {
			return a.h < b.h
		}
		if a.kv != b.kv {
			return a.kv < b.kv
		}
		if a.hd != b.hd {
			return a.hd < b.hd
		}
		return a.kvd < b.kvd
	})
	var ctx []kernels.Context
	var gens []kernels.Gen
	for _, k := range keys {
		rows := seriesOf(grids[k])
		if gen {
			gens = append(gens, kernels.Gen{Heads: k.h, KVHeads: k.kv, HeadDim: k.hd, KVDType: k.kvd, Rows: rows})
		} else {
			ctx = append(ctx, kernels.Context{Heads: k.h, KVHeads: k.kv, HeadDim: k.hd, KVDType: k.kvd, Rows: rows})
		}
	}
	return ctx, gens, nil
}

func seriesOf(g map[float64]map[float64]float64) []kernels.Series {
	var rows []kernels.Series
	for r, xs := range g {
		s := kernels.Series{Key: r}
		for x := range xs {
			s.X = append(s.X, x)
		}
		sort.Float64s(s.X)
		for _, x := range s.X {
			s.Ms = append(s.Ms, xs[x])
		}
		rows = append(rows, s)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Key < rows[j].Key })
	return rows
}

// compileMoE keeps the catalog's MoE layer layouts under the routing
// distribution AIC's model of each prices it with (moeDistribution),
// "balanced" where AIC collected only that. fp8 is AIC's per-tensor "fp8"
// where measured, else its block-scaled "fp8_block" (DeepSeek's
// checkpoint format) — except under vLLM, where it is fp8_block first
// (fp8MoELanes); the lane is chosen before the distribution; the first
// row of a repeated key wins.
func compileMoE(b []byte, sh shapes, engine string) ([]kernels.MoE, error) {
	t, err := readParquet(b)
	if err != nil {
		return nil, err
	}
	type key = [7]int
	type lane struct{ dtype, dist string } // AIC moe_dtype, distribution
	curves := map[lane]map[key]map[float64]float64{}
	type point struct {
		l lane
		k key
		x float64
	}
	var read []point // in file order, for the samples of the curves kept
	for _, row := range t.rows {
		d := t.str(row, "moe_dtype")
		di := 0
		switch d {
		case "bfloat16":
		case "fp8", "fp8_block":
			di = 1
		default:
			continue
		}
		k := key{di, t.int(row, "hidden_size"), t.int(row, "inter_size"), t.int(row, "topk"), t.int(row, "num_experts"),
			t.int(row, "moe_tp_size"), t.int(row, "moe_ep_size")}
		want, ok := sh.moe[k]
		dist := t.str(row, "distribution")
		if !ok || dist != want && dist != "balanced" {
			continue
		}
		l := lane{d, dist}
		if curves[l] == nil {
			curves[l] = map[key]map[float64]float64{}
		}
		if curves[l][k] == nil {
			curves[l][k] = map[float64]float64{}
		}
		x := float64(t.int(row, "num_tokens"))
		if _, dup := curves[l][k][x]; !dup {
			curves[l][k][x] = t.float(row, "latency")
			read = append(read, point{l, k, x})
		}
	}
	var out []kernels.MoE
	kept := map[key]lane{}
	for _, k := range sortedMoE(sh.moe) {
		dtypes := []string{"bfloat16"}
		if k[0] == 1 {
			dtypes = fp8MoELanes(engine)
		}
		var l lane
	search:
		for _, d := range dtypes {
			for _, dist := range []string{sh.moe[k], "balanced"} {
				if l = (lane{d, dist}); curves[l][k] != nil {
					break search
				}
			}
		}
		c := curves[l][k]
		if c == nil {
			continue
		}
		kept[k] = l
		s := seriesOf(map[float64]map[float64]float64{0: c})[0]
		out = append(out, kernels.MoE{DType: dtypeNames[k[0]], Hidden: k[1], Inter: k[2], TopK: k[3], Experts: k[4], TP: k[5], EP: k[6],
			Distribution: l.dist, Curve: s})
	}
	for _, r := range read {
		if kept[r.k] == r.l {
			k := r.k
			samples.add("moe", fmt.Sprintf("%s,%d,%d,%d,%d,%d,%d,%d", dtypeNames[k[0]], k[1], k[2], k[3], k[4], k[5], k[6], int(r.x)), curves[r.l][k][r.x])
		}
	}
	return out, nil
}

// fp8MoELanes orders AIC's FP8 MoE lanes by preference for the tables'
// fp8. AIC's per-tensor "fp8" MoE rows are measured on each engine's
// ModelOpt FP8 path (moe_perf kernel_source at 095f58a5: vLLM
// "vllm_modeloptfp8moe_flashinfer_cutlass_flashinferexperts" on Hopper,
// "vllm_modeloptfp8moe_flashinfer_trtllm_trtllmfp8expertsmonolithic" on Blackwell). vLLM serves the
// FP8 MoE checkpoints it is run with here through other methods: a
// compressed-tensors W8A8 FP8 checkpoint (BLIS's RedHatAI Llama-4-Scout
// FP8-dynamic) through CompressedTensorsW8A8Fp8MoEMethod (vLLM's CUTLASS
// grouped GEMM on SM90/SM100, else its fused_moe Triton kernel; vllm
// model_executor/layers/quantization/compressed_tensors/
// compressed_tensors_moe.py, use_cutlass), a block-FP8 one through
// Fp8MoEMethod — never the ModelOpt FlashInfer kernel, which on H100 runs
// this catalog's Scout layer 2.5–5× slower than vLLM's own FP8 kernel and
// slower than bf16 (16 tokens, moe TP 2: 1.87 ms against 0.40 ms
// fp8_block Triton and 0.70 ms bf16). So under vLLM the tables' fp8 MoE is
// AIC's fp8_block lane (vLLM's Fp8MoEMethod kernels, "vllm_fp8moe_*"),
// the measured FP8 MoE kernel nearest to what vLLM runs; TRT-LLM and
// SGLang keep per-tensor first (TRT-LLM's FP8 MoE checkpoints are ModelOpt
// ones; SGLang's table has only fp8_block).
func fp8MoELanes(engine string) []string {
	if engine == "vllm" {
		return []string{"fp8_block", "fp8"}
	}
	return []string{"fp8", "fp8_block"}
}

func sortedMoE(m map[[7]int]string) [][7]int {
	var ks [][7]int
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		for x := range ks[i] {
			if ks[i][x] != ks[j][x] {
				return ks[i][x] < ks[j][x]
			}
		}
		return false
	})
	return ks
}
