package timing

import (
	"fmt"
	"strings"

	"github.com/dynosim/dynosim-web/internal/detmath"
)

// Efficiency factors of the roofline model. A roofline gives the time a
// kernel would take at peak; real kernels reach a fraction of peak. Each
// factor below is a single number per resource, chosen from public
// measurements (sources in the comments) and then checked against the
// validation table in docs/timing.md.
const (
	// MemEfficiency: fraction of peak device-memory bandwidth that decode
	// (GEMV-shaped GEMMs and paged attention) sustains. Llama-3.1-8B BF16
	// decode at concurrency 1 on A100-40GB runs at ~77% of the bandwidth
	// roofline end to end (johnmusgrave.com, "vLLM throughput-latency sweep
	// on NVIDIA A100", vLLM 0.23); stream-type copies reach 85–90%
	// (NVIDIA nvbandwidth / BabelStream figures for A100/H100). 0.80 sits
	// between, the fixed overheads below covering the rest.
	MemEfficiency = 0.80
	// GEMMEfficiencyBF16: fraction of dense BF16 tensor peak that large
	// prefill GEMMs reach. cuBLAS BF16 GEMMs of LLM shapes reach ~600–700
	// TFLOPS on H100 SXM (≈ 0.6–0.7 of 989); we use 0.65.
	GEMMEfficiencyBF16 = 0.65
	// GEMMEfficiencyFP8: FP8 GEMMs with per-tensor/block scaling reach a
	// lower fraction of their (doubled) peak. Calibrated so that the NVIDIA
	// NIM Llama-3.3-70B FP8 TP2 H100 TTFT at 5000 input tokens (406.8 ms,
	// docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance) is met.
	GEMMEfficiencyFP8 = 0.55
	// GEMMEfficiencyFP4: our estimate (no public serving measurement used).
	GEMMEfficiencyFP4 = 0.40
	// AttnEfficiency: fraction of BF16 tensor peak that prefill attention
	// reaches. FlashAttention-2 reaches 50–73% of A100 peak in its paper
	// (Dao 2023, fig. 4), FlashAttention-3 ~75% of H100 peak at 16k; at
	// 1–4k sequence lengths, typical of serving, ~50%. We use 0.5.
	AttnEfficiency = 0.50
	// LayerOverheadMs: per-layer time no roofline term covers (kernel
	// boundaries, norms, rotary, small-kernel tails) — ~8–10 kernels per
	// layer at ~2 µs each under CUDA graphs. Our estimate, consistent with
	// the A100 and H100 batch-1 decode points of docs/timing.md.
	LayerOverheadMs = 0.020
	// PassOverheadMs: per forward pass CPU and framework time not hidden
	// behind the GPU (scheduling, input preparation, sampling, detokenize
	// hand-off). vLLM v1 reports this in the few-hundred-µs range; our
	// estimate is 0.4 ms.
	PassOverheadMs = 0.4
	// AllReduceLatencyNVLinkMs / PCIe: fixed latency of one small
	// all-reduce (NCCL / vLLM custom all-reduce); nccl-tests report
	// ~10–20 µs on one NVLink node, 2–3× that over PCIe.
	AllReduceLatencyNVLinkMs = 0.015
	AllReduceLatencyPCIeMs   = 0.035
	// activationBytes: element size of activations and collectives (bf16).
	activationBytes = 2
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
	// "fp8", "fp4". On a GPU without FP8/FP4 tensor cores a narrower dtype
	// still halves weight bytes (weight-only kernels) but computes at the
	// next wider supported rate.
	DType string
	// KVDType: "" (model dtype, §7.1), "bf16", "fp16", "fp8".
	KVDType string
}

// Roofline is the analytical timing model of `timing.type: default`. It
// prices one pass on one attention-data rank: weight, activation and KV
// bytes over effective memory bandwidth; GEMM and attention FLOPs over
// effective tensor throughput (the larger of the two per phase);
// tensor-parallel all-reduces and expert-parallel all-to-alls over
// NVLink/PCIe; fixed per-layer and per-pass overheads. MoE layers read
// only the experts a batch touches; MLA models read the compressed
// latent KV. With attention_data > 1 every rank is assumed to run a batch
// like the one priced (balanced ranks), so MoE layers see batch ×
// attention_data tokens.
type Roofline struct {
	Model ModelSpec
	GPU   GPUSpec
	Par   Parallelism // normalized

	weightBytes float64 // per-weight bytes after DType
	gemmFLOPS   float64 // effective
	attnFLOPS   float64 // effective
	memBW       float64 // effective bytes/s
	arLatencyMs float64

	denseParams  float64 // per GPU, read every pass: attention, dense MLP, shared experts, router, lm_head
	lmHeadParams float64 // per GPU (part of denseParams)
	routedParams float64 // per GPU, all local routed experts
	kvPerToken   float64 // bytes per GPU
}

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
	return NewRooflineFrom(m, g, spec.Parallelism, spec.DType, spec.KVDType)
}

// NewRooflineFrom builds the model from resolved specs.
func NewRooflineFrom(m ModelSpec, g GPUSpec, par Parallelism, dtype, kvDType string) (*Roofline, error) {
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("model %s: %v", m.Name, err)
	}
	par, err := par.Normalize()
	if err != nil {
		return nil, err
	}
	if m.IsMoE() && m.Experts%par.MoEExpert != 0 {
		return nil, fmt.Errorf("parallelism: moe_expert %d does not divide %d experts", par.MoEExpert, m.Experts)
	}
	r := &Roofline{Model: m, GPU: g, Par: par}
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
	// Compute rate for the GEMM dtype, falling back to wider formats.
	switch {
	case r.weightBytes <= 0.5 && g.FP4FLOPS > 0:
		r.gemmFLOPS = g.FP4FLOPS * GEMMEfficiencyFP4
	case r.weightBytes <= 1 && g.FP8FLOPS > 0:
		r.gemmFLOPS = g.FP8FLOPS * GEMMEfficiencyFP8
	default:
		r.gemmFLOPS = g.BF16FLOPS * GEMMEfficiencyBF16
	}
	r.attnFLOPS = g.BF16FLOPS * AttnEfficiency
	r.memBW = g.MemBW * MemEfficiency
	r.arLatencyMs = AllReduceLatencyPCIeMs
	if g.NVLink {
		r.arLatencyMs = AllReduceLatencyNVLinkMs
	}
	total, _ := m.Params()
	routed := float64(m.moeLayers()) * float64(m.Experts) * m.expertParams()
	inputEmbed := float64(m.Vocab) * float64(m.Hidden) // looked up, not streamed
	r.lmHeadParams = float64(m.Vocab) * float64(m.Hidden) / float64(par.Tensor)
	nonRouted := total - routed
	if !m.TiedEmbed {
		nonRouted -= inputEmbed
	}
	r.denseParams = nonRouted / float64(par.Tensor)
	r.routedParams = routed / float64(par.MoETensor*par.MoEExpert)
	r.kvPerToken = float64(KVBytesPerToken(r.Model, par.Tensor))
	return r, nil
}

// KVBytesPerToken is the KV footprint of one token on one GPU.
func (r *Roofline) KVBytesPerToken() int64 { return KVBytesPerToken(r.Model, r.Par.Tensor) }

// EstimateBlocks is EstimateBlocks for this model's GPU, model and layout.
func (r *Roofline) EstimateBlocks(memoryFraction float64, blockSize int, extraReserveBytes float64) (int, error) {
	m := r.Model
	m.WeightBytes = r.weightBytes
	return EstimateBlocks(r.GPU, m, r.Par, memoryFraction, blockSize, extraReserveBytes)
}

// touchedExperts is the expected fraction of a layer's routed experts that
// tokens top-k routed tokens touch, assuming uniform routing.
func (r *Roofline) touchedExperts(tokens float64) float64 {
	m := r.Model
	if !m.IsMoE() || tokens <= 0 {
		return 0
	}
	return 1 - detmath.Pow(1-float64(m.ExpertsPerToken)/float64(m.Experts), tokens)
}

// gemm prices the weight GEMMs of a pass over tokens tokens of this rank,
// of which outTokens go through lm_head.
func (r *Roofline) gemm(tokens, outTokens float64) float64 {
	m := r.Model
	moeTokens := tokens * float64(r.Par.AttentionData)
	bytes := (r.denseParams + r.routedParams*r.touchedExperts(moeTokens)) * r.weightBytes
	flops := 2 * (tokens*(r.denseParams-r.lmHeadParams) + outTokens*r.lmHeadParams)
	if m.IsMoE() {
		active := float64(m.moeLayers()) * float64(m.ExpertsPerToken) * m.expertParams()
		flops += 2 * moeTokens * active / float64(r.Par.MoETensor*r.Par.MoEExpert)
	}
	return 1000 * max(bytes/r.memBW, flops/r.gemmFLOPS)
}

// attention prices attention over kvTokens cached tokens read (bytes) and
// pairs (query, key) pairs computed.
func (r *Roofline) attention(kvTokens, pairs float64, decode bool) float64 {
	m := r.Model
	heads := float64((m.Heads + r.Par.Tensor - 1) / r.Par.Tensor)
	var qk, v float64
	switch {
	case m.IsMLA() && decode: // weight-absorbed MLA attends in latent space
		qk, v = float64(m.KVLoraRank+m.QKRopeHeadDim), float64(m.KVLoraRank)
	case m.IsMLA():
		qk, v = float64(m.QKNopeHeadDim+m.QKRopeHeadDim), float64(m.VHeadDim)
	default:
		qk, v = float64(m.headDim()), float64(m.headDim())
	}
	flops := float64(m.Layers) * heads * 2 * (qk + v) * pairs
	bytes := kvTokens * r.kvPerToken
	return 1000 * max(bytes/r.memBW, flops/r.attnFLOPS)
}

// overheads prices activations, collectives and fixed costs of a pass over
// tokens tokens of this rank.
func (r *Roofline) overheads(tokens float64) float64 {
	m := r.Model
	layers := float64(m.Layers)
	// ~12 hidden-sized reads/writes per layer (norms, residuals, GEMM
	// inputs/outputs) plus the MLP's intermediate activations.
	inter := float64(max(m.Intermediate, m.MoEIntermediate*max(m.ExpertsPerToken, 1))) / float64(r.Par.Tensor)
	act := layers * tokens * (12*float64(m.Hidden) + 3*inter) * activationBytes
	ms := 1000 * act / r.memBW
	ms += layers*LayerOverheadMs + PassOverheadMs
	link := r.GPU.LinkBW
	if tp := float64(r.Par.Tensor); tp > 1 {
		// Two ring all-reduces per layer (after attention and after the MLP).
		bytes := tokens * float64(m.Hidden) * activationBytes
		ms += 2 * layers * (r.arLatencyMs + 1000*2*(tp-1)/tp*bytes/link)
	}
	if m.IsMoE() {
		moeL := float64(m.moeLayers())
		if ep := float64(r.Par.MoEExpert); ep > 1 {
			// Dispatch and combine all-to-all: each token's hidden state goes
			// to its k experts, (ep−1)/ep of them remote.
			bytes := tokens * float64(m.ExpertsPerToken) * float64(m.Hidden) * activationBytes * (ep - 1) / ep / float64(r.Par.Tensor)
			ms += 2 * moeL * (r.arLatencyMs + 1000*bytes/link)
		} else if dp := float64(r.Par.AttentionData); dp > 1 {
			// Attention-DP with tensor-parallel experts: gather the ranks'
			// tokens before the MoE and reduce-scatter after (≈ one
			// all-reduce of all ranks' tokens).
			g := float64(r.Par.GPUs())
			bytes := tokens * dp * float64(m.Hidden) * activationBytes
			ms += moeL * (r.arLatencyMs + 1000*2*(g-1)/g*bytes/link)
		}
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
	return r.gemm(tokens, b) + r.attention(b*float64(isl), pairs, false) + r.overheads(tokens)
}

// DecodeMs implements Model: one token for each of batch sequences holding
// activeKV context tokens in total.
func (r *Roofline) DecodeMs(batch, activeKV, ctx, totalKV int) float64 {
	if batch <= 0 {
		return 0
	}
	b, kv := float64(batch), float64(max(activeKV, 0))
	return r.gemm(b, b) + r.attention(kv, kv, true) + r.overheads(b)
}
