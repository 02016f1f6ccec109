package timing

import (
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/dynosim/dynosim-web/internal/detmath"
)

// Per-GPU efficiency curves. A single efficiency constant per resource is
// right for one GPU at best: on AIConfigurator's measured kernel tables
// (SOURCES.md §1.1) HBM3e parts reach a lower fraction of their datasheet
// bandwidth than HBM3 ones, GDDR parts a higher one, and the power-capped
// L40S reaches only ~0.64 of its BF16 peak where A100 reaches ~0.89. The
// curves below are fitted to those tables, one set per GPU, so the model
// needs no per-run tuning: the numbers are fixed by public kernel data.
//
// Data: timing/testdata/aic/{gemm,gen_attn,ctx_attn}.csv, exact extracts
// of the AIConfigurator (github.com/ai-dynamo/aiconfigurator, Apache-2.0)
// perf database at commit 095f58a5, vLLM 0.24.0 tables (A100: 0.14.0);
// see testdata/aic/README.md. Fractions are of OUR catalog's datasheet
// peaks (catalog.go), so rtx_pro_6000 — fitted on AIC's RTX PRO 6000
// Blackwell *Server* board, which tops out near 400 BF16 TFLOPS — gets
// ≈ 0.80 of the Workstation's 500 TFLOPS: we price the Workstation at the
// Server's measured absolute speed.
//
// Fitting (a throwaway pure-Python script, not kept): for each GPU, the
// parameters of the forms documented on GEMMMs, DecodeAttnMs and
// PrefillAttnMs minimise Σ|ln(predicted/measured)| (L1 in log space:
// robust to the 5–15 % jitter between neighbouring points the README
// describes) by Nelder–Mead, over the same subsets the tests in
// curves_test.go check. The fitted values are rounded to 3 significant
// digits here; the tests check the rounded values.

// EffPoint is one node of an efficiency curve: Eff at Tokens.
type EffPoint struct{ Tokens, Eff float64 }

// GEMMEff is one dtype's GEMM curve.
type GEMMEff struct {
	// WeightBW is the roofline's bandwidth term: weights stream at this
	// fraction of MemBW (it sets m ≤ 8). Fitted together with FixedMs, so
	// it differs by a few points from bytes/latency at m = 1.
	WeightBW float64
	Compute  float64 // the compute term (sets m ≥ 2048): fraction of this dtype's dense peak
	// FixedMs is the per-call cost added to the roofline: launch, pipeline
	// ramp-up and tail; for FP8/FP4 also the launches of vLLM's
	// activation-quantization kernels.
	FixedMs float64
}

// Curves are one GPU's achievable fractions of its datasheet peaks, and
// the fixed per-call costs that go with them. A zero GEMMEff means the
// dtype has no tensor-core path on this GPU.
type Curves struct {
	BF16, FP8, FP4 GEMMEff
	// Knee is the exponent p of the soft roofline
	// t = (t_mem^p + t_comp^p)^(1/p) fitted to the m sweep: the measured
	// transition from weight-bound to compute-bound is rounder than max().
	Knee float64

	// KVReadBW: decode attention's KV read as a fraction of MemBW, fitted
	// where the KV working set is at least twice the L2 (beyond L2 the
	// replayed microbenchmark reads DRAM, as a real decode step does).
	KVReadBW           float64
	DecodeAttnFixedMs  float64 // per layer call: the tiny-KV (launch-bound) latency
	DecodeAttnPerSeqMs float64 // per sequence in the batch (Q load, output, split-KV combine)

	PrefillAttnFixedMs float64    // per layer call
	PrefillAttn        []EffPoint // causal prefill attention, fraction of BF16 peak against KV length; Tokens ascending

	knee *kneeTable // tabulated soft roofline for Knee (fast path); nil: exact
}

// kneeTable tabulates g(x) = (1 + x^p)^(1/p) on [0, 1]: the soft roofline
// is hi·g(lo/hi), and a replay prices a pass shape the memo has not seen
// with a dozen of them, each two Pow calls. Linear interpolation between
// 4,097 nodes is within 1e-7 relative of the exact value (g is smooth and
// its second derivative is below p² on [0, 1]).
type kneeTable struct {
	p float64
	g [kneeNodes + 1]float64
}

const kneeNodes = 4096

func newKneeTable(p float64) *kneeTable {
	t := &kneeTable{p: p}
	for i := range t.g {
		x := float64(i) / kneeNodes
		t.g[i] = detmath.Pow(1+detmath.Pow(x, p), 1/p)
	}
	return t
}

// soft is softRoofline(a, b, t.p) by the table.
func (t *kneeTable) soft(a, b float64) float64 {
	hi, lo := max(a, b), min(a, b)
	if hi <= 0 {
		return hi
	}
	u := lo / hi * kneeNodes
	i := min(int(u), kneeNodes-1)
	f := u - float64(i)
	return hi * (t.g[i] + f*(t.g[i+1]-t.g[i]))
}

// Fast returns c with its soft roofline tabulated (for the replay's hot
// path; GEMMMs on it agrees with the exact form to 1e-7).
func (c Curves) Fast() Curves {
	if c.Knee > 0 && !math.IsInf(c.Knee, 1) {
		kneeMu.Lock()
		t, ok := kneeTables[c.Knee]
		if !ok {
			t = newKneeTable(c.Knee)
			kneeTables[c.Knee] = t
		}
		kneeMu.Unlock()
		c.knee = t
	}
	return c
}

// kneeTables are built once per knee (immutable, shared by every run:
// a table costs ~8,000 Pow calls).
var (
	kneeMu     sync.Mutex
	kneeTables = map[float64]*kneeTable{}
)

// soft is the soft roofline of a and b with this GPU's knee.
func (c Curves) soft(a, b float64) float64 {
	if c.knee != nil {
		return c.knee.soft(a, b)
	}
	return softRoofline(a, b, c.Knee)
}

// Activation-quantization traffic per activation element for FP8 and FP4
// GEMMs, priced at the BF16 weight-streaming bandwidth. vLLM's dynamic
// per-tensor FP8 quantization (csrc/quantization/fp8/common.cu,
// dynamic_scaled_fp8_quant) runs segmented_max_reduction over the BF16
// input and then scaled_fp8_quant_kernel: 2 + 2 bytes read, 1 written.
// NVFP4 (scaled_fp4_quant) is one pass: 2 read, 0.5 written (block scales
// ignored). AIC's FP8 latencies include this step (testdata/aic/README.md),
// and pricing it lifts the Hopper FP8 fits from 84–87 % to 92–93 % of
// points within ±15 %.
const (
	fp8QuantBytes = 5
	fp4QuantBytes = 2.5
)

// prefillNodes are the sequence lengths AIC's context-attention sweep
// measured (ctx_attn.csv isl); each GPU's PrefillAttn has one node per
// length.
var prefillNodes = [...]float64{128, 256, 512, 1024, 2048, 4096, 8192, 16384}

func prefillCurve(eff ...float64) []EffPoint {
	if len(eff) != len(prefillNodes) {
		panic("timing: prefill curve needs one efficiency per node")
	}
	out := make([]EffPoint, len(eff))
	for i, e := range eff {
		out[i] = EffPoint{prefillNodes[i], e}
	}
	return out
}

// measuredCurves are the fits on AIC's tables, keyed by catalog name
// (AIC system → catalog: a100_sxm → a100_80gb, b200_sxm → b200,
// rtx_pro_6000_server → rtx_pro_6000: the RTX PRO fractions were fitted
// against the Workstation's peaks on tables AIC measured on the Server
// Edition; CurvesFor re-expresses them against the Server's own peaks,
// serverEditionCurves).
//
//   - GEMM (gemm.csv: 9 LLM shapes n·k ≥ 4096², m = 1…16384, bf16 and
//     per-tensor fp8): WeightBW, Compute and Knee fitted jointly over both
//     dtypes with the form on GEMMMs. FixedMs is fitted too, but held at or
//     above the median latency of AIC's tiny GEMMs (m ≤ 16, n·k ≤ 2^20,
//     from the full gemm_perf tables at the same commit: bf16 H100/H200
//     3.1 µs, B200 2.5, A100 4.6, L40S 3.2, RTX PRO 3.2 as in SOURCES.md
//     §1.1(c); fp8 5.4/5.4/5.9/–/5.2/5.2; nvfp4 B200 7.0, RTX PRO 8.2): a
//     big GEMM cannot cost less per call than a tiny one. L40S BF16 and
//     B200 FP4 sit on that bound. B200 FP8 is fitted alone after BF16 (it does not inform
//     Knee) because its latencies are erratic (README).
//   - FP4 (B200, RTX PRO only): AIC's nvfp4 rows for the same 9 shapes,
//     read from the full gemm_perf tables (not in testdata, so not
//     checked by the tests), Knee held at the BF16/FP8 fit. Only 83 %
//     (B200, FlashInfer CuTe-DSL) and 71 % (RTX PRO, FlashInfer CUTLASS)
//     of points land within ±15 %: the RTX PRO kernel gets *faster* from
//     m = 1 to 128, which no roofline reproduces. The FP8 weight fraction
//     did not fit FP4 (0.70 vs 0.64 on B200, 0.84 vs 0.60 on RTX PRO), so
//     FP4 has its own.
//   - Decode attention (gen_attn.csv, heads 32/8/128 and 64/8/128, BF16
//     KV): DecodeAttnFixedMs is the median latency at batch 1, kv_len ≤
//     512 (KV ≤ 2 MiB, launch-bound); KVReadBW and DecodeAttnPerSeqMs are
//     fitted over the points whose KV is at least 2× the L2.
//   - Prefill attention (ctx_attn.csv, batch 1/4/16, isl 128–16384, both
//     head sets): PrefillAttnFixedMs and one efficiency per node fitted
//     over all points.
var measuredCurves = map[string]Curves{
	"h100_sxm": {
		BF16: GEMMEff{0.869, 0.809, 0.0036}, FP8: GEMMEff{0.834, 0.673, 0.0058}, Knee: 8.74,
		KVReadBW: 0.952, DecodeAttnFixedMs: 0.0125, DecodeAttnPerSeqMs: 0.000130,
		PrefillAttnFixedMs: 0.0120, PrefillAttn: prefillCurve(0.0761, 0.148, 0.236, 0.359, 0.462, 0.557, 0.614, 0.620),
	},
	"h200_sxm": {
		BF16: GEMMEff{0.833, 0.796, 0.0042}, FP8: GEMMEff{0.798, 0.746, 0.0064}, Knee: 5.34,
		KVReadBW: 0.871, DecodeAttnFixedMs: 0.0125, DecodeAttnPerSeqMs: 0.000140,
		PrefillAttnFixedMs: 0.0119, PrefillAttn: prefillCurve(0.0794, 0.150, 0.242, 0.368, 0.480, 0.553, 0.585, 0.652),
	},
	"b200": {
		BF16: GEMMEff{0.814, 0.712, 0.0038}, FP8: GEMMEff{0.696, 0.553, 0.0067}, FP4: GEMMEff{0.640, 0.509, 0.0070}, Knee: 3.82,
		KVReadBW: 0.905, DecodeAttnFixedMs: 0.0091, DecodeAttnPerSeqMs: 0.0000206,
		PrefillAttnFixedMs: 0.0117, PrefillAttn: prefillCurve(0.0553, 0.118, 0.198, 0.265, 0.366, 0.459, 0.512, 0.550),
	},
	"a100_80gb": { // no FP8 tensor cores (SM80); AIC's A100 m grid stops at 8192
		BF16: GEMMEff{0.747, 0.893, 0.0051}, Knee: 2.28,
		KVReadBW: 0.778, DecodeAttnFixedMs: 0.0158, DecodeAttnPerSeqMs: 0.000121,
		PrefillAttnFixedMs: 0.0100, PrefillAttn: prefillCurve(0.132, 0.195, 0.284, 0.389, 0.479, 0.523, 0.562, 0.564),
	},
	"l40s": {
		BF16: GEMMEff{0.798, 0.643, 0.0032}, FP8: GEMMEff{0.713, 0.572, 0.0053}, Knee: 6.28,
		KVReadBW: 0.751, DecodeAttnFixedMs: 0.0108, DecodeAttnPerSeqMs: 0.0000825,
		PrefillAttnFixedMs: 0.0056, PrefillAttn: prefillCurve(0.142, 0.212, 0.302, 0.381, 0.437, 0.492, 0.486, 0.498),
	},
	"rtx_pro_6000": {
		BF16: GEMMEff{0.847, 0.801, 0.0040}, FP8: GEMMEff{0.843, 0.879, 0.0052}, FP4: GEMMEff{0.604, 0.741, 0.0103}, Knee: 2.48,
		KVReadBW: 0.839, DecodeAttnFixedMs: 0.0110, DecodeAttnPerSeqMs: 0.0000579,
		PrefillAttnFixedMs: 0.0075, PrefillAttn: prefillCurve(0.147, 0.210, 0.293, 0.395, 0.478, 0.541, 0.576, 0.600),
	},
}

// CurvesFor returns the curves of a catalog GPU (name normalised as by
// LookupGPU). GPUs AIC has not measured get a class default:
//   - a100_40gb: the a100_80gb curves. Same GA100 die and clocks; only the
//     HBM generation differs (HBM2 1,555 vs HBM2e 2,039 GB/s). The same
//     SMs reach a higher fraction of a lower bandwidth: AIC's one such pair
//     of the same die, H100 (3.35 TB/s) and H200 (4.8 TB/s), gives the
//     scaling of sameDieBWScale, applied to the memory-bound fractions.
//   - rtx_4090: gddrConsumerCurves (SOURCES.md §4).
//   - anything else: hbmDatacenterCurves, the per-field median of the four
//     measured HBM parts.
func CurvesFor(gpu string) Curves {
	var c Curves
	switch key := normName(gpu); key {
	case "a100_40gb":
		c = measuredCurves["a100_80gb"]
		c.BF16.WeightBW *= sameDieBWScale(1555, 2039)
		c.KVReadBW *= sameDieBWScale(1555, 2039)
	case "rtx_4090":
		c = gddrConsumerCurves()
	case "rtx_pro_6000_server":
		c = serverEditionCurves()
	default:
		var ok bool
		if c, ok = measuredCurves[key]; !ok {
			c = hbmDatacenterCurves()
		}
	}
	c.PrefillAttn = slices.Clone(c.PrefillAttn) // callers may not alias the table
	return c
}

// serverEditionCurves are the RTX PRO curves for the board AIC measured,
// the Server Edition: the fit's memory-bound fractions were taken against
// the Workstation's 1,792 GB/s, so against the Server's 1,597 GB/s they
// are larger by that ratio (the products, the bandwidths AIC observed, are
// unchanged; GEMMMs and DecodeAttnMs use only the products). The tensor
// peaks are the same on both boards, so the compute fractions stay. The
// Workstation entry keeps the fit as it is: it is priced at the Server's
// measured rates, not extrapolated to its faster memory (unmeasured).
func serverEditionCurves() Curves {
	c := measuredCurves["rtx_pro_6000"]
	r := gpuCatalog["rtx_pro_6000"].MemBW / gpuCatalog["rtx_pro_6000_server"].MemBW
	c.BF16.WeightBW *= r
	c.FP8.WeightBW *= r
	c.FP4.WeightBW *= r
	c.KVReadBW *= r
	return c
}

// sameDieBWScale is how a memory-bound fraction of peak changes when the
// same die gets memory of bandwidth bw instead of ref: fraction ∝ bw^−α,
// α = ln(0.869/0.833)/ln(4.8/3.35) ≈ 0.12 from the H100 and H200 BF16
// weight-streaming fits (same GH100 die and clocks, HBM3 vs HBM3e).
func sameDieBWScale(bw, ref float64) float64 {
	h100, h200 := measuredCurves["h100_sxm"].BF16.WeightBW, measuredCurves["h200_sxm"].BF16.WeightBW
	alpha := detmath.Log(h100/h200) / detmath.Log(4.8/3.35)
	return detmath.Pow(ref/bw, alpha)
}

// gddrConsumerCurves is the GeForce/GDDR class default, built for the RTX
// 4090 (AD102, like the L40S) from SOURCES.md §4:
//   - BF16 weight streaming 0.84: the GDDR class value; BF16 GEMV-shaped
//     GEMMs reach 0.80–0.85 on L40S and RTX PRO 6000 (fits above), and a
//     4090 copy kernel reaches 0.91 (xytpai/nvbench).
//   - BF16 compute 0.90: a 4090 BF16 matmul reaches 0.92–1.0 of the 165.2
//     TFLOPS FP32-accumulate peak (zzc0721/torch-performance-test-data
//     #78); llama.cpp's 1,024-token prefill implies 0.88.
//   - FP8: no public 4090 measurement; the L40S's FP8/BF16 ratios (same
//     die and CUTLASS kernels) applied to the two values above.
//   - KV read: mean of the two GDDR boards measured (L40S 0.751, RTX PRO
//     0.839; SOURCES.md §1.1: 0.70–0.84 beyond L2).
//   - Prefill attention: the L40S curve scaled by 0.90/0.643, the 4090's
//     GEMM fraction over the L40S's, i.e. assuming attention keeps the
//     same share of GEMM efficiency on both Ada boards (the L40S's deficit
//     is its 350 W power cap, which hurts both alike). An estimate.
//   - Knee and fixed costs: the L40S's (same SM89 kernels: cuBLAS,
//     CUTLASS, FlashAttention-2).
func gddrConsumerCurves() Curves {
	l, p := measuredCurves["l40s"], measuredCurves["rtx_pro_6000"]
	c := l
	c.BF16.WeightBW, c.BF16.Compute = 0.84, 0.90
	c.FP8.WeightBW = c.BF16.WeightBW * l.FP8.WeightBW / l.BF16.WeightBW
	c.FP8.Compute = c.BF16.Compute * l.FP8.Compute / l.BF16.Compute
	c.KVReadBW = (l.KVReadBW + p.KVReadBW) / 2
	scale := c.BF16.Compute / l.BF16.Compute
	c.PrefillAttn = make([]EffPoint, len(l.PrefillAttn))
	for i, pt := range l.PrefillAttn {
		c.PrefillAttn[i] = EffPoint{pt.Tokens, pt.Eff * scale}
	}
	return c
}

// hbmDatacenterCurves is the default for GPUs outside the catalog: for
// every field the median over the measured HBM parts (H100, H200, B200,
// A100; for FP8 the three with FP8, for FP4 B200 alone), node by node for
// the prefill curve. A median keeps one outlier part (A100's old kernels,
// B200's young ones) from setting the default.
func hbmDatacenterCurves() Curves {
	parts := []Curves{measuredCurves["h100_sxm"], measuredCurves["h200_sxm"], measuredCurves["b200"], measuredCurves["a100_80gb"]}
	field := func(get func(Curves) float64) float64 {
		var v []float64
		for _, c := range parts {
			if x := get(c); x > 0 {
				v = append(v, x)
			}
		}
		return median(v)
	}
	gemm := func(get func(Curves) GEMMEff) GEMMEff {
		return GEMMEff{
			WeightBW: field(func(c Curves) float64 { return get(c).WeightBW }),
			Compute:  field(func(c Curves) float64 { return get(c).Compute }),
			FixedMs:  field(func(c Curves) float64 { return get(c).FixedMs }),
		}
	}
	d := Curves{
		BF16:               gemm(func(c Curves) GEMMEff { return c.BF16 }),
		FP8:                gemm(func(c Curves) GEMMEff { return c.FP8 }),
		FP4:                gemm(func(c Curves) GEMMEff { return c.FP4 }),
		Knee:               field(func(c Curves) float64 { return c.Knee }),
		KVReadBW:           field(func(c Curves) float64 { return c.KVReadBW }),
		DecodeAttnFixedMs:  field(func(c Curves) float64 { return c.DecodeAttnFixedMs }),
		DecodeAttnPerSeqMs: field(func(c Curves) float64 { return c.DecodeAttnPerSeqMs }),
		PrefillAttnFixedMs: field(func(c Curves) float64 { return c.PrefillAttnFixedMs }),
	}
	for i, n := range prefillNodes {
		d.PrefillAttn = append(d.PrefillAttn, EffPoint{n, field(func(c Curves) float64 { return c.PrefillAttn[i].Eff })})
	}
	return d
}

// median of v (mean of the middle two for even length); 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// gemmPath picks the curve, the peak and the activation-quantization bytes
// for weights of weightBytes bytes on g: 0.5 → FP4 if the GPU has FP4
// tensor cores, else as 1; < 2 → FP8 if it has FP8 tensor cores, else
// BF16 (a weight-only kernel: narrow weights, BF16 math, no activation
// quantization).
func (c Curves) gemmPath(weightBytes float64, g GPUSpec) (GEMMEff, float64, float64) {
	switch {
	case weightBytes <= 0.5 && g.FP4FLOPS > 0 && c.FP4.Compute > 0:
		return c.FP4, g.FP4FLOPS, fp4QuantBytes
	case weightBytes < 2 && g.FP8FLOPS > 0 && c.FP8.Compute > 0:
		return c.FP8, g.FP8FLOPS, fp8QuantBytes
	}
	return c.BF16, g.BF16FLOPS, 0
}

// GEMMMs prices one GEMM kernel [m×k]·[k×n] with weights of weightBytes
// bytes per element (2 BF16, 1 FP8, 0.5 FP4) and BF16 activations:
//
//	bytes  = n·k·weightBytes + (m·k + m·n)·2
//	t_mem  = bytes / (WeightBW · MemBW)
//	t_comp = 2·m·n·k / (Compute · peak)
//	t      = FixedMs + (t_mem^Knee + t_comp^Knee)^(1/Knee) + t_quant
//
// with the dtype's curve and peak chosen as on gemmPath, and, for FP8/FP4
// math, t_quant = m·k·(5 | 2.5) / (BF16.WeightBW · MemBW) for quantizing
// the activations. The fixed cost is added, not a floor: fitted with
// max(3 µs, roofline) instead, the 4096×4096 GEMMs come out 20–50 % too
// fast on H100, H200, B200 and A100 (H100: 90 % of BF16 and 62 % of FP8
// points within ±15 %), while adding ~3–7 µs per call fits them and every
// larger shape.
func (c Curves) GEMMMs(m, n, k, weightBytes float64, g GPUSpec) float64 {
	if m <= 0 || n <= 0 || k <= 0 {
		return 0
	}
	e, peak, quant := c.gemmPath(weightBytes, g)
	bytes := n*k*weightBytes + (m*k+m*n)*activationBytes
	sec := c.soft(bytes/(e.WeightBW*g.MemBW), 2*m*n*k/(e.Compute*peak))
	if quant > 0 {
		sec += m * k * quant / (c.BF16.WeightBW * g.MemBW)
	}
	return e.FixedMs + 1000*sec
}

// softRoofline is (a^p + b^p)^(1/p), computed as hi·(1 + (lo/hi)^p)^(1/p)
// so that tiny times cannot underflow; p ≤ 0 or infinite means max(a, b).
func softRoofline(a, b, p float64) float64 {
	hi, lo := max(a, b), min(a, b)
	if hi <= 0 || p <= 0 || math.IsInf(p, 1) {
		return hi
	}
	return hi * detmath.Pow(1+detmath.Pow(lo/hi, p), 1/p)
}

// DecodeAttnMs prices one layer's decode attention call over seqs
// sequences holding kvBytes of KV in total (all KV heads of this GPU, K
// and V):
//
//	t = DecodeAttnFixedMs + seqs·DecodeAttnPerSeqMs + kvBytes / (KVReadBW · MemBW)
//
// The form is additive because a max(floor, bytes/BW) fit misses half of
// the Hopper points beyond L2 (on H100 the KV-read fraction climbs from
// 0.62–0.71 of datasheet at 128 MiB to 0.93 at 1–2 GiB), and at a fixed
// KV size batch 256 × 128 tokens is ~50 % slower than batch 16 × 2,048
// on H100.
// For KV working sets inside L2 the replayed microbenchmark beats this
// (it re-reads an L2-resident KV); in a real step other layers evict it.
// The per-sequence term was measured with 8 KV heads of 128; fewer KV
// heads per GPU (tensor parallelism) probably cost less per sequence.
func (c Curves) DecodeAttnMs(seqs, kvBytes float64, g GPUSpec) float64 {
	if seqs <= 0 && kvBytes <= 0 {
		return 0
	}
	return c.DecodeAttnFixedMs + max(seqs, 0)*c.DecodeAttnPerSeqMs + 1000*max(kvBytes, 0)/(c.KVReadBW*g.MemBW)
}

// PrefillAttnEff is the fraction of BF16 peak causal prefill attention
// reaches for sequences of seqTokens KV tokens: piecewise-linear in
// log(tokens) between the nodes, clamped at the ends. It rises with
// length because each query tile's fixed cost (Q load, softmax epilogue,
// output store) is spread over a K loop as long as the sequence. seqTokens
// is the KV length the queries attend over; AIC measured prefix = 0
// (query length = KV length), so a chunk with a cached prefix is an
// extrapolation.
func (c Curves) PrefillAttnEff(seqTokens float64) float64 {
	p := c.PrefillAttn
	switch {
	case len(p) == 0:
		return 0
	case seqTokens <= p[0].Tokens:
		return p[0].Eff
	case seqTokens >= p[len(p)-1].Tokens:
		return p[len(p)-1].Eff
	}
	i := sort.Search(len(p), func(i int) bool { return p[i].Tokens >= seqTokens }) // p[i-1] < seq ≤ p[i]
	a, b := p[i-1], p[i]
	u := (detmath.Log(seqTokens) - detmath.Log(a.Tokens)) / (detmath.Log(b.Tokens) - detmath.Log(a.Tokens))
	return a.Eff + u*(b.Eff-a.Eff)
}

// PrefillAttnMs prices one layer's prefill attention call doing flops
// FLOPs (4·pairs·heads·head_dim; causal pairs ≈ s²/2 per sequence) on
// sequences of seqTokens tokens:
//
//	t = PrefillAttnFixedMs + flops / (PrefillAttnEff(seqTokens) · BF16FLOPS)
//
// The efficiency depends on the sequence length only; the fixed cost
// carries the batch-1 short-sequence points, where the kernel is
// launch-bound (b = 1 at 512 tokens reaches 0.10 of H100 peak, b = 16
// 0.19, and one length-only curve cannot give both without it).
func (c Curves) PrefillAttnMs(flops, seqTokens float64, g GPUSpec) float64 {
	eff := c.PrefillAttnEff(seqTokens)
	if flops <= 0 || eff <= 0 {
		return 0
	}
	return c.PrefillAttnFixedMs + 1000*flops/(eff*g.BF16FLOPS)
}
