package timing

import (
	"fmt"
	"math"
	"strings"

	"github.com/dynosim/dynosim-web/internal/detmath"
)

// The roofline's efficiencies are per-GPU curves fitted to public kernel
// tables (curves.go); the costs below are what those tables do not cover.
const (
	// LayerOverheadMs: per layer, the elementwise kernels no GEMM or
	// attention table times — two RMSNorms, rotary, SiLU-and-mul, the KV
	// cache write — ~5 launches of ~2 µs each under CUDA graphs (the same
	// per-call floor AIC's tiny GEMMs show, curves.go).
	LayerOverheadMs = 0.010
	// activationBytes: element size of activations and collectives (bf16).
	activationBytes = 2
	// attnFallbackEff: fraction of BF16 peak for attention FLOPs no table
	// covers (weight-absorbed MLA decode, whose latent attention is
	// compute-heavy); FlashAttention-2/3 reach ~0.5 at serving lengths.
	attnFallbackEff = 0.5
	// cudaGraphMaxBatch: the largest decode batch vLLM V1 captures as a
	// CUDA graph by default (compilation_config max_capture_size 512);
	// larger ones run eagerly.
	cudaGraphMaxBatch = 512
)

// RooflineSpec selects a roofline model. Exactly one of Model (a catalog
// name) or ModelConfig (a Hugging Face config.json's bytes) is used;
// ModelConfig wins when both are set.
type RooflineSpec struct {
	Model           string      // catalog name, e.g. "llama-3.1-8b"
	ModelConfig     []byte      // HF config.json content (optional)
	ModelConfigName string      // its file name, for errors
	Hardware        string      // GPU catalog name, e.g. "h100_sxm"
	Parallelism     Parallelism // zero fields mean 1
	// DType of weights and GEMMs: "" (the checkpoint's), "bf16", "fp16",
	// "fp8", "fp4". A named dtype the GPU has no tensor units for is
	// refused (dtype.go: FP8 needs Ada/Hopper or later, FP4 Blackwell).
	DType string
	// KVDType: "" (model dtype, §7.1), "bf16", "fp16", "fp8"; fp8 needs
	// FP8 tensor cores too.
	KVDType string
	// Engine is the serving engine whose per-pass overheads apply: vllm
	// (default), sglang or trtllm (overhead.go).
	Engine string
}

// Roofline is the analytical timing model of `timing.type: default`. It
// prices one pass on one attention-data rank: each weight GEMM and each
// layer's attention on the GPU's measured efficiency curves (curves.go:
// bytes over achievable bandwidth and FLOPs over achievable throughput,
// blended by a soft roofline, plus per-call costs); tensor-parallel
// all-reduces and expert-parallel all-to-alls by fabric
// (interconnect.go); the engine's per-pass costs (overhead.go). MoE layers read
// only the experts a batch touches; MLA models read the compressed
// latent KV. With attention_data > 1 every rank is assumed to run a batch
// like the one priced (balanced ranks), so MoE layers see batch ×
// attention_data tokens. With pipeline > 1 a pass is one virtual engine's
// batch traversing every stage in turn: each stage runs its layers' kernels
// on its own GPUs at full speed, so the kernels of all the layers are
// priced as without pipelining, the per-pass fixed costs once, plus
// pipeline − 1 stage-to-stage activation transfers (pipelineTransferMs).
// The stages of other virtual engines' batches overlap it (vLLM V0's
// virtual engines, V1's pp batches in flight); that overlap is the
// scheduler's (core/engine), not this model's.
type Roofline struct {
	Model ModelSpec
	GPU   GPUSpec
	Par   Parallelism // normalized

	weightBytes float64 // per-weight bytes after DType
	curves      Curves
	overhead    Overhead

	kernels      []kernel // the dense weight GEMMs of the layers, per GPU
	lmHead       kernel
	routedParams float64 // per GPU, all local routed experts
	kvPerToken   float64 // bytes per GPU

	// memo caches gemm by its arguments: a replay prices the same token
	// counts (decode batch sizes, full prefill chunks) over and over, and
	// each price takes a dozen Pow calls. gemm is pure, so the cache
	// changes no result; a Roofline belongs to one run (not goroutine-safe).
	memo   [gemmMemoSize]gemmMemo
	decode *decodeMemo // decode passes' batch-only parts (decodememo.go)
	syncMs float64     // one TP all-reduce's sync term (TPSyncMs), fixed when built

	engine string        // vllm, sglang or trtllm
	kt     *kernelTables // measured kernel tables, nil: curves only (kerneltables.go)
}

const gemmMemoSize = 1024 // a power of two

type gemmMemo struct {
	tokens, out, ms float64
	ok              bool
}

// kernel is one weight GEMM shape on one GPU, run count times per pass
// (once per layer it appears in).
type kernel struct{ n, k, count float64 }

// NewRoofline builds the model; errors name the unknown model or hardware
// or the inconsistent parallelism.
func NewRoofline(spec RooflineSpec) (*Roofline, error) {
	var m ModelSpec
	var err error
	if spec.ModelConfig != nil {
		name := spec.ModelConfigName
		if name == "" {
			name = "config.json"
		}
		if m, err = ParseHFConfig(spec.ModelConfig, name); err != nil {
			return nil, err
		}
		if m.Name == "" {
			m.Name = name
		}
	} else if m, err = LookupModel(spec.Model); err != nil {
		return nil, err
	}
	g, err := LookupGPU(spec.Hardware)
	if err != nil {
		return nil, err
	}
	r, err := NewRooflineFrom(m, g, spec.Parallelism, spec.DType, spec.KVDType)
	if err != nil {
		return nil, err
	}
	if r.overhead, err = EngineOverhead(spec.Engine); err != nil {
		return nil, err
	}
	if spec.Engine != "" {
		r.engine = spec.Engine
	}
	r.kvPerToken = r.attnKVPerToken()
	return r, nil
}

// attnKVPerToken is the KV bytes per token per GPU that attention reads
// at its achievable bandwidth. vLLM's FP8 KV cache halves the bytes
// stored, not the attention's time: "The current FP8 KV cache
// implementation primarily benefits throughput by allowing approximately
// double the amount of space for KV cache allocation ... there are
// currently no latency improvements as the implementation does not yet
// include fused dequantization and attention operations" (vLLM docs,
// features/quantization/quantized_kvcache, through v0.11.2; InferenceMAX
// ran v0.10.2). So under vLLM an FP8 cache is read as fast as a BF16 one:
// priced at the model dtype's bytes. Not on Blackwell, where vLLM runs
// decode attention on FlashInfer's TRT-LLM-gen kernels, which read FP8 KV
// natively (as TRT-LLM's and SGLang's FP8 KV paths do everywhere). On
// InferenceMAX's fitted split (H100 vLLM, KV fp8) the TPOT error had
// fallen with the batch and more steeply with the context (−16 to −20 %
// at concurrency 64 with 5k-token contexts, −6 % with 1.5k): the reading
// of a cache priced at half its time.
func (r *Roofline) attnKVPerToken() float64 {
	kv := float64(KVBytesPerToken(r.Model, r.Par.Tensor))
	if r.engine == "vllm" && r.Model.KVBytes == 1 && r.GPU.FP4FLOPS == 0 { // FP4 tensor cores: Blackwell
		m := r.Model
		m.KVBytes = 2 // the BF16 cache's read time
		kv = float64(KVBytesPerToken(m, r.Par.Tensor))
	}
	return kv
}

// NewRooflineFrom builds the model from resolved specs, with vLLM's
// overheads.
func NewRooflineFrom(m ModelSpec, g GPUSpec, par Parallelism, dtype, kvDType string) (*Roofline, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("model %s: %v", m.Name, err)
	}
	par, err := par.Normalize()
	if err != nil {
		return nil, err
	}
	if err := CheckPipeline(m, par); err != nil {
		return nil, err
	}
	if m.IsMoE() && m.Experts%par.MoEExpert != 0 {
		return nil, fmt.Errorf("parallelism: moe_expert %d does not divide %d experts", par.MoEExpert, m.Experts)
	}
	r := &Roofline{Model: m, GPU: g, Par: par, curves: CurvesFor(g.Name).Fast(), engine: "vllm"}
	r.overhead, _ = EngineOverhead("")
	switch strings.ToLower(dtype) {
	case "":
		r.weightBytes = m.WeightBytes
	case "bf16", "bfloat16", "fp16", "float16", "auto":
		r.weightBytes = 2
	case "fp8", "float8", "float8_e4m3fn":
		r.weightBytes = 1
	case "fp4", "nvfp4", "mxfp4":
		r.weightBytes = 0.5
	default:
		return nil, fmt.Errorf("dtype: unknown %q (want bf16, fp16, fp8 or fp4)", dtype)
	}
	switch strings.ToLower(kvDType) {
	case "", "auto":
	case "bf16", "bfloat16", "fp16", "float16":
		r.Model.KVBytes = 2
	case "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla", "int8":
		r.Model.KVBytes = 1
	default:
		return nil, fmt.Errorf("kv_cache dtype: unknown %q (want bf16, fp16 or fp8)", kvDType)
	}
	if err := g.CheckDType(dtype, false); err != nil {
		return nil, fmt.Errorf("dtype: %w", err)
	}
	if err := g.CheckDType(kvDType, true); err != nil {
		return nil, fmt.Errorf("kv_cache dtype: %w", err)
	}
	r.kernels = denseKernels(m, par)
	r.lmHead = kernel{n: float64(m.Vocab) / float64(par.Tensor), k: float64(m.Hidden), count: 1}
	r.routedParams = float64(m.moeLayers()) * float64(m.Experts) * m.expertParams() / float64(par.MoETensor*par.MoEExpert)
	r.kvPerToken = r.attnKVPerToken()
	r.syncMs = TPSyncMs(g.Fabric, par.Tensor)
	return r, nil
}

// Overhead is the engine's fixed costs this model prices with.
func (r *Roofline) Overhead() Overhead { return r.overhead }

// KVBytesPerToken is the KV footprint of one token on one GPU: with
// pipeline > 1, on a GPU of the stage with the most layers.
func (r *Roofline) KVBytesPerToken() int64 { return KVBytesPerTokenPerGPU(r.Model, r.Par) }

// EstimateBlocks is EstimateBlocks for this model's GPU, model and layout.
func (r *Roofline) EstimateBlocks(memoryFraction float64, blockSize int, extraReserveBytes float64) (int, error) {
	m := r.Model
	m.WeightBytes = r.weightBytes
	return EstimateBlocks(r.GPU, m, r.Par, memoryFraction, blockSize, extraReserveBytes)
}

// EstimateBlocksReserve is EstimateBlocks with the whole reserve given
// (EstimateBlocksReserve the function).
func (r *Roofline) EstimateBlocksReserve(memoryFraction float64, blockSize int, reserve float64) (int, error) {
	m := r.Model
	m.WeightBytes = r.weightBytes
	return EstimateBlocksReserve(r.GPU, m, r.Par, memoryFraction, blockSize, reserve)
}

// touchedExperts is the expected fraction of a layer's routed experts that
// tokens top-k routed tokens touch, assuming uniform routing.
func (r *Roofline) touchedExperts(tokens float64) float64 {
	m := &r.Model
	if !m.IsMoE() || tokens <= 0 {
		return 0
	}
	return 1 - detmath.Pow(1-float64(m.ExpertsPerToken)/float64(m.Experts), tokens)
}

// denseKernels are the weight GEMMs every pass runs through on one GPU:
// attention projections, dense MLPs and shared experts, split tensor ways
// (column-parallel n, row-parallel k), and MoE routers.
func denseKernels(m ModelSpec, par Parallelism) []kernel {
	tp := float64(par.Tensor)
	h := float64(m.Hidden)
	layers := float64(m.Layers)
	var ks []kernel
	if m.IsMLA() {
		// Latent projections of several shapes: one kernel of the same
		// weight count and input width stands for them.
		ks = append(ks, kernel{n: m.attnParams() / tp / h, k: h, count: layers})
	} else {
		hd := float64(m.headDim())
		q := float64((m.Heads+par.Tensor-1)/par.Tensor) * hd
		kv := float64((m.KVHeads+par.Tensor-1)/par.Tensor) * hd
		ks = append(ks, kernel{n: q + 2*kv, k: h, count: layers}, kernel{n: h, k: q, count: layers})
	}
	mlp := func(inter, count float64) {
		if inter > 0 && count > 0 {
			ks = append(ks, kernel{n: 2 * inter / tp, k: h, count: count}, kernel{n: h, k: inter / tp, count: count})
		}
	}
	moeL := float64(m.moeLayers())
	mlp(float64(m.Intermediate), layers-moeL)
	mlp(float64(m.MoEIntermediate*m.SharedExperts), moeL)
	if moeL > 0 {
		ks = append(ks, kernel{n: float64(m.Experts), k: h, count: moeL})
	}
	return ks
}

// gemm prices the weight GEMMs of a pass over tokens tokens of this rank,
// of which outTokens go through lm_head: every kernel on the GPU's
// measured curve (curves.go). lm_head stays BF16 in quantized checkpoints
// (vLLM and ModelOpt leave it unquantized).
func (r *Roofline) gemm(tokens, outTokens float64) float64 {
	h := (math.Float64bits(tokens)*0x9E3779B97F4A7C15 ^ math.Float64bits(outTokens)*0xC2B2AE3D27D4EB4F) >> 54 // 10 bits
	e := &r.memo[h&(gemmMemoSize-1)]
	if e.ok && e.tokens == tokens && e.out == outTokens {
		return e.ms
	}
	ms := r.gemmMs(tokens, outTokens)
	*e = gemmMemo{tokens, outTokens, ms, true}
	return ms
}

func (r *Roofline) gemmMs(tokens, outTokens float64) float64 {
	var ms float64
	for i, k := range r.kernels {
		if r.kt != nil && r.kt.gemm[i] != nil {
			ms += k.count * r.tableKernelMs(i, tokens)
			continue
		}
		ms += k.count * r.curves.GEMMMs(tokens, k.n, k.k, r.weightBytes, r.GPU)
	}
	if r.kt != nil && r.kt.lmHead != nil {
		ms += r.tableGEMMMs(r.kt.lmHead, outTokens)
	} else {
		ms += r.curves.GEMMMs(outTokens, r.lmHead.n, r.lmHead.k, 2, r.GPU)
	}
	if m := &r.Model; m.IsMoE() {
		// Routed experts: a grouped GEMM per projection reads the experts
		// the batch touches and computes every token's top-k of them.
		moeTokens := tokens * float64(r.Par.AttentionData)
		if r.kt != nil && r.kt.moe != nil { // measured (kerneltables.go)
			return ms + float64(m.moeLayers())*r.kt.moe.Ms(moeTokens)
		}
		e, peak, _ := r.curves.gemmPath(r.weightBytes, r.GPU)
		bytes := r.routedParams * r.touchedExperts(moeTokens) * r.weightBytes
		active := float64(m.moeLayers()) * float64(m.ExpertsPerToken) * m.expertParams() / float64(r.Par.MoETensor*r.Par.MoEExpert)
		flops := 2 * moeTokens * active
		ms += 2*float64(m.moeLayers())*e.FixedMs + 1000*r.curves.soft(bytes/(e.WeightBW*r.GPU.MemBW), flops/(e.Compute*peak))
	}
	return ms
}

// attention prices attention over kvTokens cached tokens read, pairs
// (query, key) pairs computed and batch sequences of seq tokens each.
func (r *Roofline) attention(kvTokens, pairs, batch, seq float64, decode bool) float64 {
	if ms, ok := r.tableAttentionMs(kvTokens, pairs, batch, seq, decode); ok {
		return ms
	}
	m := &r.Model
	heads := float64((m.Heads + r.Par.Tensor - 1) / r.Par.Tensor)
	layers := float64(m.Layers)
	var qk, v float64
	switch {
	case m.IsMLA() && decode: // weight-absorbed MLA attends in latent space
		qk, v = float64(m.KVLoraRank+m.QKRopeHeadDim), float64(m.KVLoraRank)
	case m.IsMLA():
		qk, v = float64(m.QKNopeHeadDim+m.QKRopeHeadDim), float64(m.VHeadDim)
	default:
		qk, v = float64(m.headDim()), float64(m.headDim())
	}
	flops := heads * 2 * (qk + v) * pairs // per layer
	bytes := kvTokens * r.kvPerToken / layers
	if decode {
		ms := r.curves.DecodeAttnMs(batch, bytes, r.GPU)
		if m.IsMLA() {
			ms = max(ms, 1000*flops/(attnFallbackEff*r.GPU.BF16FLOPS))
		}
		return layers * ms
	}
	ms := max(r.curves.PrefillAttnMs(flops, seq, r.GPU), 1000*bytes/(r.curves.KVReadBW*r.GPU.MemBW))
	return layers * ms
}

// overheads prices elementwise activations, collectives and fixed costs of
// a pass over tokens tokens of this rank (batch sequences); graph: the
// pass runs as a captured CUDA graph (decode), not eagerly.
func (r *Roofline) overheads(tokens, batch float64, graph bool) float64 {
	m := &r.Model
	layers := float64(m.Layers)
	// Elementwise traffic the GEMM curves do not include: two norms and
	// two residual adds (read + write of the hidden state each), rotary,
	// and the MLP's activation function over its intermediate.
	inter := float64(max(m.Intermediate, m.MoEIntermediate*max(m.ExpertsPerToken, 1))) / float64(r.Par.Tensor)
	act := layers * tokens * (8*float64(m.Hidden) + 3*inter) * activationBytes
	ms := 1000 * act / (r.curves.BF16.WeightBW * r.GPU.MemBW)
	ms += layers*LayerOverheadMs + r.overhead.PassMs + batch*r.overhead.PerSeqMs
	g := r.GPU
	if tp := r.Par.Tensor; tp > 1 {
		// Two all-reduces per layer (after attention and after the MLP),
		// inside the CUDA graph for decode-only passes.
		// Each also waits for the slowest rank (TPSyncMs, tpsync.go).
		ms += 2 * layers * (AllReduceMs(g.Fabric, g.LinkBW, tp, tokens*float64(m.Hidden)*activationBytes, graph) + r.syncMs)
	}
	if m.IsMoE() {
		moeL := float64(m.moeLayers())
		if ep := float64(r.Par.MoEExpert); ep > 1 {
			// Dispatch and combine all-to-all: each token's hidden state goes
			// to its k experts, (ep−1)/ep of them remote.
			bytes := tokens * float64(m.ExpertsPerToken) * float64(m.Hidden) * activationBytes * (ep - 1) / ep / float64(r.Par.Tensor)
			ms += 2 * moeL * SendRecvMs(g.Fabric, g.LinkBW, bytes)
		} else if dp := r.Par.AttentionData; dp > 1 {
			// Attention-DP with tensor-parallel experts: gather the ranks'
			// tokens before the MoE and reduce-scatter after (≈ one
			// all-reduce of all ranks' tokens).
			// One stage's GPUs (a pipeline stage gathers only its own).
			ms += moeL * AllReduceMs(g.Fabric, g.LinkBW, r.Par.Tensor*dp, tokens*float64(dp)*float64(m.Hidden)*activationBytes, graph)
		}
	}
	if r.Par.Pipeline > 1 {
		ms += r.pipelineTransferMs(tokens)
	}
	return ms
}

// PrefillMs implements Model: batch prompts of isl tokens each, prefix of
// them already cached.
func (r *Roofline) PrefillMs(batch, isl, prefix int) float64 {
	if batch <= 0 || isl-prefix <= 0 {
		return 0
	}
	b, n, p := float64(batch), float64(isl-prefix), float64(max(prefix, 0))
	tokens := b * n
	pairs := b * (n*p + n*(n+1)/2) // causal
	return r.gemm(tokens, b) + r.attention(b*float64(isl), pairs, b, float64(isl), false) + r.overheads(tokens, b, false)
}

// MixedMs implements Mixed: the prefill chunks and the decode tokens in
// one forward — the GEMMs run once over all tokens, each attention kind
// over its own sequences, the overheads once.
func (r *Roofline) MixedMs(batch, isl, prefix, decBatch, activeKV, ctx, totalKV int) float64 {
	if batch <= 0 || isl-prefix <= 0 {
		return r.DecodeMs(decBatch, activeKV, ctx, totalKV)
	}
	if decBatch <= 0 {
		return r.PrefillMs(batch, isl, prefix)
	}
	b, n, p := float64(batch), float64(isl-prefix), float64(max(prefix, 0))
	d, kv := float64(decBatch), float64(max(activeKV, 0))
	tokens := b*n + d
	return r.gemm(tokens, b+d) + r.attention(b*float64(isl), b*(n*p+n*(n+1)/2), b, float64(isl), false) +
		r.attention(kv, kv, d, kv/d, true) + r.overheads(tokens, b+d, false)
}

// DecodeMs implements Model: one token for each of batch sequences holding
// activeKV context tokens in total.
func (r *Roofline) DecodeMs(batch, activeKV, ctx, totalKV int) float64 {
	if batch <= 0 {
		return 0
	}
	b, kv := float64(batch), float64(max(activeKV, 0))
	gemm, over := r.decodeParts(batch, b)
	return gemm + r.decodeAttention(kv, b, batch, max(activeKV, 0)) + over
}
