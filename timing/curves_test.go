package timing

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The curves in curves.go are checked against the AIConfigurator kernel
// tables they were fitted to (testdata/aic, see its README.md): every
// point of a clearly defined subset is priced and compared with the
// measured latency. A check passes when at least minShare of the points
// are within ±15 % and the median error is within ±5 %.
const (
	pointTol  = 0.15
	medianTol = 0.05
	minShare  = 0.90
)

// aicSystem maps an AIC system to our catalog GPU. l2 is the GPU's L2
// cache in bytes, used only to pick decode-attention points whose KV
// cannot be L2-resident: H100 SXM5 50 MB (NVIDIA H100 Tensor Core GPU
// Architecture whitepaper); H200 50 MB (the same GH100 die; the data's
// latency cliff between 32 and 64 MiB of KV agrees); B200 126 MB (Chips
// and Cheese, "Nvidia's B200: Keeping the CUDA Juggernaut Rolling"); A100
// 40 MB (NVIDIA A100 Tensor Core GPU Architecture whitepaper); L40S 96 MB
// and RTX PRO 6000 128 MB (SOURCES.md §1.1).
var aicSystems = []struct {
	system, gpu string
	l2          float64
}{
	{"h100_sxm", "h100_sxm", 50e6},
	{"h200_sxm", "h200_sxm", 50e6},
	{"b200_sxm", "b200", 126e6},
	{"a100_sxm", "a100_80gb", 40e6},
	{"l40s", "l40s", 96e6},
	// AIC measured the Server board, whose 500 BF16 TFLOPS (the
	// Workstation's too) it reaches only ~0.80 of (curves.go); the
	// Workstation entry is priced from the same tables (TestItem33_7RTXProServer).
	{"rtx_pro_6000_server", "rtx_pro_6000_server", 128e6},
}

// aicTable is one testdata/aic CSV: rows of named columns.
type aicTable struct {
	col  map[string]int
	rows [][]string
}

func readAIC(t *testing.T, name string) aicTable {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "aic", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("%s: %v (%d records)", name, err, len(recs))
	}
	tab := aicTable{col: map[string]int{}, rows: recs[1:]}
	for i, h := range recs[0] {
		tab.col[h] = i
	}
	return tab
}

func (a aicTable) str(t *testing.T, row []string, name string) string {
	t.Helper()
	i, ok := a.col[name]
	if !ok {
		t.Fatalf("no column %q", name)
	}
	return row[i]
}

func (a aicTable) num(t *testing.T, row []string, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(a.str(t, row, name), 64)
	if err != nil {
		t.Fatalf("column %s: %v", name, err)
	}
	return v
}

// score summarises relative errors (predicted/measured − 1).
type score struct {
	n      int
	share  float64 // within ±pointTol
	median float64
	worst  float64
}

func scoreOf(errs []float64) score {
	s := score{n: len(errs), median: median(errs)}
	within := 0
	for _, e := range errs {
		if math.Abs(e) <= pointTol {
			within++
		}
		if math.Abs(e) > math.Abs(s.worst) {
			s.worst = e
		}
	}
	if s.n > 0 {
		s.share = float64(within) / float64(s.n)
	}
	return s
}

// ok reports whether s passes with the given minimum share (≤ 0: the
// per-point share is reported but not required).
func (s score) ok(share float64) bool {
	return s.n > 0 && s.share >= share && math.Abs(s.median) <= medianTol
}

// gemmErrors prices the gemm.csv rows of one system and dtype with c.
//
// Subset: every row (all nine shapes have n·k ≥ 4096², which is
// asserted), all m, bf16 and fp8, minus one README-named anomaly:
// fp8 4096×4096 on B200, RTX PRO 6000 and L40S. AIC replays 6 weight
// copies per graph without flushing L2, so 6 × 16 MiB = 96 MiB of fp8
// weights can come back from L2 on these ~100 MB-L2 parts (README; L40S
// "borderline", and its m ≤ 16 points do run at 1.4–1.7× the DRAM
// roofline).
func gemmErrors(t *testing.T, tab aicTable, system, dtype string, c Curves, g GPUSpec) []float64 {
	t.Helper()
	var errs []float64
	for _, r := range tab.rows {
		if tab.str(t, r, "system") != system || tab.str(t, r, "dtype") != dtype {
			continue
		}
		m, n, k := tab.num(t, r, "m"), tab.num(t, r, "n"), tab.num(t, r, "k")
		if n*k < 4096*4096 {
			t.Fatalf("%s %s: shape %gx%g is outside the checked subset", system, dtype, n, k)
		}
		if dtype == "fp8" && n == 4096 && k == 4096 && (system == "b200_sxm" || system == "rtx_pro_6000_server" || system == "l40s") {
			continue // weights L2-resident in the microbenchmark (README)
		}
		wb := 2.0
		if dtype == "fp8" {
			wb = 1
		}
		errs = append(errs, c.GEMMMs(m, n, k, wb, g)/tab.num(t, r, "latency_ms")-1)
	}
	return errs
}

// gemmShare is the required share for one system and dtype.
func gemmShare(system, dtype string) float64 {
	switch {
	case system == "b200_sxm" && dtype == "fp8":
		// README: "B200 fp8 is erratic … Don't hold B200 fp8 points to
		// ±15 % one at a time" (e.g. 4096×16384 takes 3× longer at m = 8
		// and 32 than at m = 2, 4, 16, 64). Only the median is checked.
		return 0
	case system == "l40s" && dtype == "bfloat16":
		// The power-capped L40S (350 W) scatters ±25 % between
		// neighbouring large-m shapes with no trend in shape or m (its
		// FLOP fraction falls from 0.66 at m = 2048 to 0.56 at 8192,
		// SOURCES.md §1.1); no smooth curve reaches 90 %.
		return 0.85
	}
	return minShare
}

func TestGEMMCurveMatchesAIC(t *testing.T) {
	tab := readAIC(t, "gemm.csv")
	for _, s := range aicSystems {
		for _, dtype := range []string{"bfloat16", "fp8"} {
			t.Run(s.gpu+"/"+dtype, func(t *testing.T) {
				g := mustGPU(t, s.gpu)
				errs := gemmErrors(t, tab, s.system, dtype, CurvesFor(s.gpu), g)
				if len(errs) == 0 {
					if dtype == "fp8" && g.FP8FLOPS == 0 {
						t.Skip("no FP8 tensor cores; AIC has no fp8 table")
					}
					t.Fatal("no points")
				}
				sc, need := scoreOf(errs), gemmShare(s.system, dtype)
				t.Logf("%-12s %-8s n=%3d within±15%%=%5.1f%% median=%+5.1f%% worst=%+5.1f%% (need ≥ %.0f%%)",
					s.gpu, dtype, sc.n, 100*sc.share, 100*sc.median, 100*sc.worst, 100*need)
				if !sc.ok(need) {
					t.Errorf("GEMM curve misses AIC: %.1f%% within ±15%% (need %.0f%%), median %+.1f%% (need ±5%%)",
						100*sc.share, 100*need, 100*sc.median)
				}
			})
		}
	}
}

// decodeErrors prices gen_attn.csv rows of one system with c. Subset:
// both head sets, every batch and kv_len whose KV (batch · kv_len · 8 KV
// heads · 128 · K,V · 2 B) is at least twice the L2. Smaller working sets
// are re-read from L2 by the replayed microbenchmark (README: L40S reads
// 64 MiB at 2.1× its DRAM bandwidth), which a real decode step, whose
// other layers evict the KV, does not see.
func decodeErrors(t *testing.T, tab aicTable, system string, l2 float64, c Curves, g GPUSpec) []float64 {
	t.Helper()
	var errs []float64
	for _, r := range tab.rows {
		if tab.str(t, r, "system") != system || tab.str(t, r, "kv_cache_dtype") != "bfloat16" {
			continue
		}
		b := tab.num(t, r, "batch_size")
		kv := b * tab.num(t, r, "kv_len") * tab.num(t, r, "num_kv_heads") * tab.num(t, r, "head_dim") * 2 * 2
		if kv < 2*l2 {
			continue
		}
		errs = append(errs, c.DecodeAttnMs(b, kv, g)/tab.num(t, r, "latency_ms")-1)
	}
	return errs
}

func TestDecodeAttentionCurveMatchesAIC(t *testing.T) {
	tab := readAIC(t, "gen_attn.csv")
	for _, s := range aicSystems {
		t.Run(s.gpu, func(t *testing.T) {
			sc := scoreOf(decodeErrors(t, tab, s.system, s.l2, CurvesFor(s.gpu), mustGPU(t, s.gpu)))
			t.Logf("%-12s n=%3d within±15%%=%5.1f%% median=%+5.1f%% worst=%+5.1f%%", s.gpu, sc.n, 100*sc.share, 100*sc.median, 100*sc.worst)
			if sc.n < 15 || !sc.ok(minShare) {
				t.Errorf("decode attention curve misses AIC: n=%d, %.1f%% within ±15%%, median %+.1f%%", sc.n, 100*sc.share, 100*sc.median)
			}
		})
	}
}

// prefillErrors prices ctx_attn.csv rows of one system with c. Subset:
// every row — batch 1, 4, 16; isl 128–16384; 32 and 64 query heads —
// with causal FLOPs batch · 4 · isl²/2 · heads · head_dim (SOURCES.md
// §1.1).
func prefillErrors(t *testing.T, tab aicTable, system string, c Curves, g GPUSpec) []float64 {
	t.Helper()
	var errs []float64
	for _, r := range tab.rows {
		if tab.str(t, r, "system") != system || tab.num(t, r, "prefix") != 0 {
			continue
		}
		s := tab.num(t, r, "isl")
		flops := tab.num(t, r, "batch_size") * 4 * s * s / 2 * tab.num(t, r, "num_heads") * tab.num(t, r, "head_dim")
		errs = append(errs, c.PrefillAttnMs(flops, s, g)/tab.num(t, r, "latency_ms")-1)
	}
	return errs
}

func TestPrefillAttentionCurveMatchesAIC(t *testing.T) {
	tab := readAIC(t, "ctx_attn.csv")
	for _, s := range aicSystems {
		t.Run(s.gpu, func(t *testing.T) {
			sc := scoreOf(prefillErrors(t, tab, s.system, CurvesFor(s.gpu), mustGPU(t, s.gpu)))
			t.Logf("%-12s n=%3d within±15%%=%5.1f%% median=%+5.1f%% worst=%+5.1f%%", s.gpu, sc.n, 100*sc.share, 100*sc.median, 100*sc.worst)
			if sc.n < 40 || !sc.ok(minShare) {
				t.Errorf("prefill attention curve misses AIC: n=%d, %.1f%% within ±15%%, median %+.1f%%", sc.n, 100*sc.share, 100*sc.median)
			}
		})
	}
}

// TestCurveChecksCanFail shows the three checks above have teeth. On
// every GPU the same scoring rejects curves 25 % too fast (all fractions
// × 1.25, fixed costs kept) in each of the three checks. The single
// constants these curves replace (roofline.go: MemEfficiency 0.80, GEMM
// 0.65/0.55, AttnEfficiency 0.5, hard max, no fixed costs) must fail at
// least one check per GPU; which ones they pass is logged (RTX PRO 6000
// decode attention beyond L2 really does run at ~0.80 of its bandwidth).
func TestCurveChecksCanFail(t *testing.T) {
	gemm, dec, pre := readAIC(t, "gemm.csv"), readAIC(t, "gen_attn.csv"), readAIC(t, "ctx_attn.csv")
	fast := func(c Curves) Curves {
		for _, e := range []*GEMMEff{&c.BF16, &c.FP8, &c.FP4} {
			e.WeightBW *= 1.25
			e.Compute *= 1.25
		}
		c.KVReadBW *= 1.25
		for i := range c.PrefillAttn {
			c.PrefillAttn[i].Eff *= 1.25
		}
		return c
	}
	constants := func(Curves) Curves {
		return Curves{
			BF16: GEMMEff{WeightBW: 0.80, Compute: 0.65}, FP8: GEMMEff{WeightBW: 0.80, Compute: 0.55},
			Knee: math.Inf(1), KVReadBW: 0.80,
			PrefillAttn: []EffPoint{{1, 0.5}},
		}
	}
	for _, bad := range []struct {
		name string
		f    func(Curves) Curves
		all  bool // every check must reject, not just one
	}{{"25% fast", fast, true}, {"single constants", constants, false}} {
		for _, s := range aicSystems {
			t.Run(bad.name+"/"+s.gpu, func(t *testing.T) {
				g, c := mustGPU(t, s.gpu), bad.f(CurvesFor(s.gpu))
				checks := []struct {
					what string
					sc   score
				}{
					{"gemm bf16", scoreOf(gemmErrors(t, gemm, s.system, "bfloat16", c, g))},
					{"decode", scoreOf(decodeErrors(t, dec, s.system, s.l2, c, g))},
					{"prefill", scoreOf(prefillErrors(t, pre, s.system, c, g))},
				}
				rejected := 0
				for _, ch := range checks {
					if !ch.sc.ok(minShare) {
						rejected++
						continue
					}
					if bad.all {
						t.Errorf("%s check accepts %s curves (%.1f%% within, median %+.1f%%)", ch.what, bad.name, 100*ch.sc.share, 100*ch.sc.median)
					} else {
						t.Logf("%s check accepts %s curves (%.1f%% within, median %+.1f%%)", ch.what, bad.name, 100*ch.sc.share, 100*ch.sc.median)
					}
				}
				if rejected == 0 {
					t.Errorf("no check rejects %s curves", bad.name)
				}
			})
		}
	}
}

func TestCurvesForCatalog(t *testing.T) {
	for _, name := range append(GPUNames(), "unknown_gpu") {
		t.Run(name, func(t *testing.T) {
			c := CurvesFor(name)
			g, err := LookupGPU(name)
			if err != nil {
				g = GPUSpec{FP8FLOPS: 1, FP4FLOPS: 1} // the default carries every dtype
			}
			in := func(what string, v, lo, hi float64) {
				if !(v >= lo && v <= hi) {
					t.Errorf("%s = %g, want in [%g, %g]", what, v, lo, hi)
				}
			}
			dtypes := []struct {
				what string
				e    GEMMEff
				has  bool
			}{{"BF16", c.BF16, true}, {"FP8", c.FP8, g.FP8FLOPS > 0}, {"FP4", c.FP4, g.FP4FLOPS > 0}}
			for _, d := range dtypes {
				if !d.has {
					continue
				}
				in(d.what+".WeightBW", d.e.WeightBW, 0.3, 1)
				in(d.what+".Compute", d.e.Compute, 0.3, 1)
				in(d.what+".FixedMs", d.e.FixedMs, 0.001, 0.02)
			}
			in("Knee", c.Knee, 1, 20)
			in("KVReadBW", c.KVReadBW, 0.5, 1)
			in("DecodeAttnFixedMs", c.DecodeAttnFixedMs, 0.005, 0.03)
			in("DecodeAttnPerSeqMs", c.DecodeAttnPerSeqMs, 0, 0.001)
			in("PrefillAttnFixedMs", c.PrefillAttnFixedMs, 0.001, 0.03)
			if len(c.PrefillAttn) == 0 {
				t.Fatal("no prefill curve")
			}
			for i, p := range c.PrefillAttn {
				in("PrefillAttn.Eff", p.Eff, 0.01, 1)
				if i > 0 && p.Tokens <= c.PrefillAttn[i-1].Tokens {
					t.Errorf("PrefillAttn not ascending at %d", i)
				}
			}
		})
	}
	// Aliases and defaults.
	same := func(a, b Curves) bool {
		return a.BF16 == b.BF16 && a.FP8 == b.FP8 && a.KVReadBW == b.KVReadBW && a.PrefillAttnEff(3000) == b.PrefillAttnEff(3000)
	}
	// A100-40GB: the 80 GB part's curves, its memory-bound fractions
	// raised by the same-die scaling (lower bandwidth, same SMs).
	a40, a80 := CurvesFor("A100-40GB"), CurvesFor("a100_80gb")
	if k := sameDieBWScale(1555, 2039); !(k > 1.02 && k < 1.05) || a40.BF16.WeightBW != a80.BF16.WeightBW*k || a40.KVReadBW != a80.KVReadBW*k ||
		a40.BF16.Compute != a80.BF16.Compute || a40.PrefillAttnEff(3000) != a80.PrefillAttnEff(3000) {
		t.Errorf("a100_40gb = %+v, want a100_80gb's with memory fractions × %.3f", a40, k)
	}
	if !same(CurvesFor("no-such-gpu"), hbmDatacenterCurves()) {
		t.Error("unknown GPUs should get the HBM datacenter default")
	}
	if c := CurvesFor("rtx_4090"); c.BF16.Compute != 0.90 || c.BF16.WeightBW != 0.84 {
		t.Errorf("rtx_4090 = %+v, want the GDDR consumer class values 0.84 / 0.90", c.BF16)
	}
	// The returned curve must not alias the table.
	c := CurvesFor("h100_sxm")
	c.PrefillAttn[0].Eff = 99
	if CurvesFor("h100_sxm").PrefillAttn[0].Eff == 99 {
		t.Error("CurvesFor returns an aliased PrefillAttn")
	}
}

func TestGEMMPath(t *testing.T) {
	cases := []struct {
		gpu         string
		weightBytes float64
		want        string // curve used
		quant       float64
	}{
		{"h100_sxm", 2, "BF16", 0},
		{"h100_sxm", 1, "FP8", fp8QuantBytes},
		{"h100_sxm", 0.5, "FP8", fp8QuantBytes}, // no FP4 tensor cores: FP8 math
		{"b200", 0.5, "FP4", fp4QuantBytes},
		{"b200", 1, "FP8", fp8QuantBytes},
		{"a100_80gb", 1, "BF16", 0}, // weight-only FP8: BF16 math, no activation quantization
		{"a100_80gb", 0.5, "BF16", 0},
		{"rtx_4090", 0.5, "FP8", fp8QuantBytes},
	}
	for _, tc := range cases {
		g, c := mustGPU(t, tc.gpu), CurvesFor(tc.gpu)
		e, peak, quant := c.gemmPath(tc.weightBytes, g)
		want := map[string]struct {
			e    GEMMEff
			peak float64
		}{"BF16": {c.BF16, g.BF16FLOPS}, "FP8": {c.FP8, g.FP8FLOPS}, "FP4": {c.FP4, g.FP4FLOPS}}[tc.want]
		if e != want.e || peak != want.peak || quant != tc.quant {
			t.Errorf("%s weightBytes %g: got %+v peak %g quant %g, want the %s curve, quant %g", tc.gpu, tc.weightBytes, e, peak, quant, tc.want, tc.quant)
		}
	}
}

func TestGEMMMsLimits(t *testing.T) {
	g, c := mustGPU(t, "h100_sxm"), CurvesFor("h100_sxm")
	cases := []struct {
		name       string
		m, n, k    float64
		wb         float64
		want, tol  float64 // ms, relative
		wantExactZ bool
	}{
		{"empty", 0, 4096, 4096, 2, 0, 0, true},
		// m = 1: weight-bound, 32 MiB at 0.869 × 3.35 TB/s + 3.6 µs.
		{"m=1 bf16", 1, 4096, 4096, 2, 0.0036 + 1000*(4096*4096*2+2*4096*2)/(0.869*3.35e12), 1e-3, false},
		// Huge m: compute-bound, 2mnk at 0.809 × 989.5 TFLOPS (+ the soft knee's last ‰).
		{"m=65536 bf16", 65536, 8192, 8192, 2, 1000 * 2 * 65536 * 8192 * 8192 / (0.809 * 989.5e12), 5e-3, false},
	}
	for _, tc := range cases {
		got := c.GEMMMs(tc.m, tc.n, tc.k, tc.wb, g)
		if tc.wantExactZ {
			if got != 0 {
				t.Errorf("%s: got %g, want 0", tc.name, got)
			}
			continue
		}
		if math.Abs(got/tc.want-1) > tc.tol {
			t.Errorf("%s: got %.6g ms, want %.6g ms (±%g)", tc.name, got, tc.want, tc.tol)
		}
	}
}

func TestPrefillAttnEff(t *testing.T) {
	c := Curves{PrefillAttn: []EffPoint{{512, 0.2}, {2048, 0.4}, {8192, 0.5}}}
	cases := []struct {
		tokens, want float64
	}{
		{1, 0.2}, {512, 0.2}, {1024, 0.3}, {2048, 0.4}, {4096, 0.45}, {8192, 0.5}, {1e6, 0.5},
	}
	for _, tc := range cases {
		if got := c.PrefillAttnEff(tc.tokens); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("PrefillAttnEff(%g) = %g, want %g", tc.tokens, got, tc.want)
		}
	}
	if got := (Curves{}).PrefillAttnEff(1000); got != 0 {
		t.Errorf("empty curve: %g, want 0", got)
	}
	if got := (Curves{}).PrefillAttnMs(1e12, 1000, mustGPU(t, "h100_sxm")); got != 0 {
		t.Errorf("empty curve: PrefillAttnMs %g, want 0", got)
	}
}

func TestDecodeAttnMs(t *testing.T) {
	g, c := mustGPU(t, "l40s"), CurvesFor("l40s")
	if got := c.DecodeAttnMs(0, 0, g); got != 0 {
		t.Errorf("empty: %g, want 0", got)
	}
	// 64 sequences, 1 GiB of KV: fixed + 64 × per-seq + bytes at 0.751 × 864 GB/s.
	want := 0.0108 + 64*0.0000825 + 1000*float64(1<<30)/(0.751*864e9)
	if got := c.DecodeAttnMs(64, 1<<30, g); math.Abs(got/want-1) > 1e-12 {
		t.Errorf("got %g, want %g", got, want)
	}
}

// The tabulated soft roofline the replay uses agrees with the exact one.
func TestKneeTableMatchesExact(t *testing.T) {
	for _, name := range GPUNames() {
		c := CurvesFor(name)
		f := c.Fast()
		for _, x := range []float64{0, 1e-4, 0.01, 0.3, 0.5, 0.77, 0.9, 0.999, 1} {
			a, b := 2.5, 2.5*x
			want, got := softRoofline(a, b, c.Knee), f.soft(a, b)
			if math.Abs(got/want-1) > 1e-7 || f.soft(b, a) != got {
				t.Errorf("%s x=%v: table %v, exact %v", name, x, got, want)
			}
		}
	}
}
