package timing

import (
	"fmt"
	"sort"
	"strings"
)

// GPUSpec holds the facts of one accelerator that the roofline model
// uses. Rates are peak dense (no 2:4 sparsity) per GPU.
type GPUSpec struct {
	Name        string
	MemoryBytes float64 // device memory
	MemBW       float64 // peak device-memory bandwidth, bytes/s
	BF16FLOPS   float64 // dense BF16/FP16 tensor FLOP/s (FP32 accumulate)
	FP8FLOPS    float64 // dense FP8 tensor FLOP/s; 0 = no FP8 tensor cores (engine.dtype fp8 refused: dtype.go)
	FP4FLOPS    float64 // dense FP4 tensor FLOP/s; 0 = none (engine.dtype fp4 refused)
	LinkBW      float64 // GPU-to-GPU bandwidth per direction, bytes/s
	Fabric      Fabric  // how the GPUs of a worker talk: NVLink generation or PCIe with/without P2P (interconnect.go)
}

const (
	gb  = 1e9
	tb  = 1e12
	mib = 1 << 20
)

// gpuCatalog. Sources (vendor datasheets; dense = half the "with sparsity"
// figure the datasheets headline):
//   - h100_sxm: NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column):
//     80 GB HBM3, 3.35 TB/s, BF16 1,979 TFLOPS* and FP8 3,958 TFLOPS*
//     (*with sparsity), NVLink 900 GB/s (bidirectional → 450 GB/s/dir).
//   - h200_sxm: NVIDIA H200 datasheet: 141 GB HBM3e, 4.8 TB/s, same tensor
//     rates and NVLink as H100 SXM.
//   - b200: NVIDIA DGX B200 datasheet: 8 GPUs, 1,440 GB total (180 GB/GPU),
//     64 TB/s HBM3e (8 TB/s/GPU), 72 PFLOPS FP8 and 144 PFLOPS FP4 with
//     sparsity for 8 GPUs (→ 4.5 PF FP8, 9 PF FP4 dense/GPU; BF16 = FP8/2),
//     NVLink 5 1.8 TB/s bidirectional per GPU.
//   - a100_80gb: NVIDIA A100 datasheet (SXM 80GB): 2,039 GB/s HBM2e, BF16
//     312 TFLOPS dense, no FP8, NVLink 600 GB/s bidirectional.
//   - a100_40gb: same datasheet (SXM 40GB): 1,555 GB/s HBM2. Not one of the
//     required names; kept because the validation table has a public
//     measurement on it.
//   - l40s: NVIDIA L40S datasheet: 48 GB GDDR6, 864 GB/s, BF16 362.05
//     TFLOPS dense (733 with sparsity), FP8 733 dense (1,466 sparse), PCIe
//     Gen4 x16 (≈ 32 GB/s/dir), no NVLink.
//   - rtx_4090: NVIDIA Ada Lovelace architecture whitepaper, GeForce RTX
//     4090: 24 GB GDDR6X, 1,008 GB/s, FP16/BF16 tensor with FP32
//     accumulate 165.2 TFLOPS dense, FP8 (FP32 acc.) 330.3 dense; PCIe Gen4
//     with peer-to-peer disabled on GeForce boards (NCCL goes through host
//     memory; SOURCES.md §3, nccl-tests #74, tinygrad open-gpu-kernel-modules).
//   - rtx_pro_6000: NVIDIA RTX PRO 6000 Blackwell Workstation Edition
//     datasheet: 96 GB GDDR7, 1,792 GB/s, 4,000 "AI TOPS" (FP4, sparse) →
//     FP4 2,000, FP8 1,000, BF16 500 TFLOPS dense (our derivation: each
//     halving of precision doubles rate, sparsity doubles it again —
//     an estimate, the datasheet gives only the FP4 figure); PCIe Gen5
//     x16 (≈ 64 GB/s/dir).
//   - rtx_pro_6000_server: NVIDIA RTX PRO 6000 Blackwell Server Edition
//     product page: 96 GB GDDR7 (ECC), 1,597 GB/s, FP4 4 PFLOPS, FP8 2
//     PFLOPS, FP16/BF16 1 PFLOPS (with sparsity → 2,000 / 1,000 / 500
//     dense, as the Workstation), up to 600 W (configurable), passive,
//     PCIe Gen5 x16, no NVLink. Same GB202 board and tensor rates as the
//     Workstation; the memory is clocked lower (1,597 vs 1,792 GB/s).
//     97,887 MiB as nvidia-smi reports it on AIConfigurator's Server box
//     (systems/rtx_pro_6000_server.yaml), whose GPUs ran at a 2,430 MHz
//     maximum SM clock: AIC's measured RTX PRO tables are this board's.
//
// Each entry's public sources, one line each, are in gpuSources
// (gpusources.go); TestItem33_7GPUSources fails if one has none.
//
// MemoryBytes is the total nvidia-smi reports for each board (MiB), as
// commonly published; it is what memory_fraction applies to.
var gpuCatalog = map[string]GPUSpec{
	"h100_sxm":            {MemoryBytes: 81559 * mib, MemBW: 3.35 * tb, BF16FLOPS: 989.5e12, FP8FLOPS: 1979e12, LinkBW: 450 * gb, Fabric: FabricNVLink4},
	"h200_sxm":            {MemoryBytes: 143771 * mib, MemBW: 4.8 * tb, BF16FLOPS: 989.5e12, FP8FLOPS: 1979e12, LinkBW: 450 * gb, Fabric: FabricNVLink4},
	"b200":                {MemoryBytes: 183359 * mib, MemBW: 8 * tb, BF16FLOPS: 2250e12, FP8FLOPS: 4500e12, FP4FLOPS: 9000e12, LinkBW: 900 * gb, Fabric: FabricNVLink5},
	"a100_80gb":           {MemoryBytes: 81920 * mib, MemBW: 2.039 * tb, BF16FLOPS: 312e12, LinkBW: 300 * gb, Fabric: FabricNVLink3},
	"a100_40gb":           {MemoryBytes: 40960 * mib, MemBW: 1.555 * tb, BF16FLOPS: 312e12, LinkBW: 300 * gb, Fabric: FabricNVLink3},
	"l40s":                {MemoryBytes: 46068 * mib, MemBW: 864 * gb, BF16FLOPS: 362.05e12, FP8FLOPS: 733e12, LinkBW: 32 * gb, Fabric: FabricPCIeP2P},
	"rtx_4090":            {MemoryBytes: 24564 * mib, MemBW: 1008 * gb, BF16FLOPS: 165.2e12, FP8FLOPS: 330.3e12, LinkBW: 32 * gb, Fabric: FabricPCIeNoP2P},
	"rtx_pro_6000":        {MemoryBytes: 97887 * mib, MemBW: 1792 * gb, BF16FLOPS: 500e12, FP8FLOPS: 1000e12, FP4FLOPS: 2000e12, LinkBW: 64 * gb, Fabric: FabricPCIeP2P},
	"rtx_pro_6000_server": {MemoryBytes: 97887 * mib, MemBW: 1597 * gb, BF16FLOPS: 500e12, FP8FLOPS: 1000e12, FP4FLOPS: 2000e12, LinkBW: 64 * gb, Fabric: FabricPCIeP2P},
}

// LookupGPU returns the catalog entry for name (case-insensitive; "-" and
// "_" are interchangeable).
func LookupGPU(name string) (GPUSpec, error) {
	key := normName(name)
	g, ok := gpuCatalog[key]
	if !ok {
		return GPUSpec{}, fmt.Errorf("unknown hardware %q (known: %s)", name, strings.Join(GPUNames(), ", "))
	}
	g.Name = key
	return g, nil
}

// GPUNames lists the GPU catalog, sorted.
func GPUNames() []string { return sortedKeys(gpuCatalog) }

// ModelSpec describes a decoder-only transformer as far as timing and KV
// sizing need. Counts are for the whole model (not per GPU).
type ModelSpec struct {
	Name         string
	Layers       int
	Hidden       int
	Heads        int // attention (query) heads
	KVHeads      int
	HeadDim      int // explicit head_dim, else Hidden/Heads
	Intermediate int // dense MLP width (SwiGLU: 3 matrices)
	Vocab        int
	TiedEmbed    bool // lm_head shares the embedding matrix

	// Mixture of experts (Experts == 0: dense).
	Experts         int // routed experts per MoE layer
	ExpertsPerToken int // top-k
	MoEIntermediate int // width of one expert
	SharedExperts   int // always-active experts per MoE layer
	DenseLayers     int // leading layers with a dense MLP (DeepSeek first_k_dense_replace)

	// Multi-head latent attention (KVLoraRank > 0: MLA, DeepSeek-V2/V3).
	KVLoraRank    int
	QLoraRank     int
	QKNopeHeadDim int
	QKRopeHeadDim int
	VHeadDim      int

	WeightBytes float64 // bytes per weight of the released checkpoint (2 bf16, 1 fp8)
	KVBytes     int     // bytes per KV element (2 for bf16/fp16 KV cache)
}

// modelCatalog. Every figure is from the model's Hugging Face config.json
// (huggingface.co/<repo>/blob/main/config.json):
//   - llama-3.1-8b: meta-llama/Llama-3.1-8B-Instruct: 32 layers, hidden
//     4096, 32 heads, 8 KV heads, intermediate 14336, vocab 128256, bf16.
//   - llama-3.1-70b: meta-llama/Llama-3.1-70B-Instruct: 80 layers, hidden
//     8192, 64 heads, 8 KV heads, intermediate 28672, vocab 128256, bf16.
//   - qwen3-32b: Qwen/Qwen3-32B: 64 layers, hidden 5120, 64 heads, 8 KV
//     heads, head_dim 128 (≠ 5120/64), intermediate 25600, vocab 151936.
//   - qwen3-30b-a3b: Qwen/Qwen3-30B-A3B: 48 layers, hidden 2048, 32 heads,
//     4 KV heads, head_dim 128, 128 experts top-8, moe_intermediate 768,
//     vocab 151936.
//   - qwen3-235b-a22b: Qwen/Qwen3-235B-A22B: 94 layers, hidden 4096, 64
//     heads, 4 KV heads, head_dim 128, 128 experts top-8,
//     moe_intermediate 1536, vocab 151936.
//   - deepseek-v3: deepseek-ai/DeepSeek-V3: 61 layers (first 3 dense,
//     intermediate 18432), hidden 7168, 128 heads, MLA kv_lora_rank 512,
//     q_lora_rank 1536, qk_nope 128, qk_rope 64, v_head 128, 256 routed
//     experts top-8 + 1 shared, moe_intermediate 2048, vocab 129280,
//     FP8 (e4m3, block-scaled) weights.
//   - mistral-7b: mistralai/Mistral-7B-Instruct-v0.3: 32 layers, hidden
//     4096, 32 heads, 8 KV heads, intermediate 14336, vocab 32768, bf16.
//   - llama-2-7b: meta-llama/Llama-2-7b-hf: 32 layers, hidden 4096, 32
//     heads (MHA: 32 KV heads), intermediate 11008, vocab 32000, fp16.
//   - mistral-nemo-12b: mistralai/Mistral-Nemo-Instruct-2407: 40 layers,
//     hidden 5120, 32 heads, 8 KV heads, head_dim 128 (≠ 5120/32),
//     intermediate 14336, vocab 131072.
//   - qwen2.5-7b: Qwen/Qwen2.5-7B-Instruct: 28 layers, hidden 3584, 28
//     heads, 4 KV heads, intermediate 18944, vocab 152064 (untied).
//   - yi-34b: 01-ai/Yi-34B: 60 layers, hidden 7168, 56 heads, 8 KV heads,
//     intermediate 20480, vocab 64000.
//   - llama-4-scout-17b-16e: meta-llama/Llama-4-Scout-17B-16E-Instruct
//     (text_config): 48 layers, all MoE (interleave_moe_layer_step 1),
//     hidden 5120, 40 heads, 8 KV heads, head_dim 128, 16 experts top-1 and
//     one shared expert, each 8192 wide (intermediate_size; the 16384
//     intermediate_size_mlp is for dense layers, which Scout has none of),
//     vocab 202048. The BLIS runs' five models come from its
//     model_configs (inference-sim/inference-sim @ f90a1e3a).
//
// Derived parameter counts (ModelSpec.Params) match the published sizes:
// 8.03 B, 70.6 B, 32.8 B, 30.5 B (3.3 B active), 235 B (22 B active),
// 671 B (37 B active), 7.25 B.
var modelCatalog = map[string]ModelSpec{
	"llama-3.1-8b":    {Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 128256, WeightBytes: 2, KVBytes: 2},
	"llama-3.1-70b":   {Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 28672, Vocab: 128256, WeightBytes: 2, KVBytes: 2},
	"qwen3-32b":       {Layers: 64, Hidden: 5120, Heads: 64, KVHeads: 8, HeadDim: 128, Intermediate: 25600, Vocab: 151936, WeightBytes: 2, KVBytes: 2},
	"qwen3-30b-a3b":   {Layers: 48, Hidden: 2048, Heads: 32, KVHeads: 4, HeadDim: 128, Intermediate: 6144, Vocab: 151936, Experts: 128, ExpertsPerToken: 8, MoEIntermediate: 768, WeightBytes: 2, KVBytes: 2},
	"qwen3-235b-a22b": {Layers: 94, Hidden: 4096, Heads: 64, KVHeads: 4, HeadDim: 128, Intermediate: 12288, Vocab: 151936, Experts: 128, ExpertsPerToken: 8, MoEIntermediate: 1536, WeightBytes: 2, KVBytes: 2},
	"deepseek-v3": {Layers: 61, Hidden: 7168, Heads: 128, KVHeads: 128, HeadDim: 192, Intermediate: 18432, Vocab: 129280,
		Experts: 256, ExpertsPerToken: 8, MoEIntermediate: 2048, SharedExperts: 1, DenseLayers: 3,
		KVLoraRank: 512, QLoraRank: 1536, QKNopeHeadDim: 128, QKRopeHeadDim: 64, VHeadDim: 128, WeightBytes: 1, KVBytes: 2},
	"mistral-7b":       {Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 32768, WeightBytes: 2, KVBytes: 2},
	"llama-2-7b":       {Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 32, HeadDim: 128, Intermediate: 11008, Vocab: 32000, WeightBytes: 2, KVBytes: 2},
	"mistral-nemo-12b": {Layers: 40, Hidden: 5120, Heads: 32, KVHeads: 8, HeadDim: 128, Intermediate: 14336, Vocab: 131072, WeightBytes: 2, KVBytes: 2},
	"qwen2.5-7b":       {Layers: 28, Hidden: 3584, Heads: 28, KVHeads: 4, HeadDim: 128, Intermediate: 18944, Vocab: 152064, WeightBytes: 2, KVBytes: 2},
	"yi-34b":           {Layers: 60, Hidden: 7168, Heads: 56, KVHeads: 8, HeadDim: 128, Intermediate: 20480, Vocab: 64000, WeightBytes: 2, KVBytes: 2},
	"llama-4-scout-17b-16e": {Layers: 48, Hidden: 5120, Heads: 40, KVHeads: 8, HeadDim: 128, Intermediate: 16384, Vocab: 202048,
		Experts: 16, ExpertsPerToken: 1, MoEIntermediate: 8192, SharedExperts: 1, WeightBytes: 2, KVBytes: 2},
}

// LookupModel returns the catalog entry for name (case-insensitive; an
// "org/" prefix and "-instruct" suffix are ignored, "_" equals "-").
func LookupModel(name string) (ModelSpec, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		key = key[i+1:]
	}
	key = strings.ReplaceAll(key, "_", "-")
	key = strings.TrimSuffix(key, "-instruct")
	m, ok := modelCatalog[key]
	if !ok {
		return ModelSpec{}, fmt.Errorf("unknown model %q (known: %s; or give a Hugging Face config.json)", name, strings.Join(ModelNames(), ", "))
	}
	m.Name = key
	return m, nil
}

// ModelNames lists the model catalog, sorted.
func ModelNames() []string { return sortedKeys(modelCatalog) }

func normName(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// IsMoE reports whether the model has routed experts.
func (m ModelSpec) IsMoE() bool { return m.Experts > 0 && m.ExpertsPerToken > 0 }

// IsMLA reports whether the model uses multi-head latent attention.
func (m ModelSpec) IsMLA() bool { return m.KVLoraRank > 0 }

func (m ModelSpec) headDim() int {
	if m.HeadDim > 0 {
		return m.HeadDim
	}
	if m.Heads > 0 {
		return m.Hidden / m.Heads
	}
	return 0
}

// attnParams is the weight count of one attention block.
func (m ModelSpec) attnParams() float64 {
	h := float64(m.Hidden)
	if m.IsMLA() {
		qk := float64(m.QKNopeHeadDim + m.QKRopeHeadDim)
		heads := float64(m.Heads)
		var q float64
		if m.QLoraRank > 0 {
			q = h*float64(m.QLoraRank) + float64(m.QLoraRank)*heads*qk
		} else {
			q = h * heads * qk
		}
		kvA := h * float64(m.KVLoraRank+m.QKRopeHeadDim)
		kvB := float64(m.KVLoraRank) * heads * float64(m.QKNopeHeadDim+m.VHeadDim)
		o := heads * float64(m.VHeadDim) * h
		return q + kvA + kvB + o
	}
	hd := float64(m.headDim())
	return 2*h*float64(m.Heads)*hd + 2*h*float64(m.KVHeads)*hd
}

func (m ModelSpec) moeLayers() int {
	if !m.IsMoE() {
		return 0
	}
	return m.Layers - m.DenseLayers
}

func (m ModelSpec) expertParams() float64 {
	return 3 * float64(m.Hidden) * float64(m.MoEIntermediate)
}

// Params returns the total and the per-token active weight counts
// (embedding and lm_head included once each; tied embeddings once).
func (m ModelSpec) Params() (total, active float64) {
	h := float64(m.Hidden)
	dense := float64(m.Layers-m.moeLayers()) * 3 * h * float64(m.Intermediate)
	attn := float64(m.Layers) * m.attnParams()
	emb := float64(m.Vocab) * h
	if !m.TiedEmbed {
		emb *= 2
	}
	ml := float64(m.moeLayers())
	routed := ml * float64(m.Experts) * m.expertParams()
	shared := ml * (float64(m.SharedExperts)*m.expertParams() + h*float64(m.Experts))
	activeRouted := ml * float64(m.ExpertsPerToken) * m.expertParams()
	return attn + dense + emb + routed + shared, attn + dense + emb + activeRouted + shared
}

// Validate reports a model spec that cannot be priced.
func (m ModelSpec) Validate() error {
	switch {
	case m.Layers <= 0:
		return fmt.Errorf("num_hidden_layers: must be > 0, got %d", m.Layers)
	case m.Hidden <= 0:
		return fmt.Errorf("hidden_size: must be > 0, got %d", m.Hidden)
	case m.Heads <= 0:
		return fmt.Errorf("num_attention_heads: must be > 0, got %d", m.Heads)
	case m.KVHeads <= 0 && !m.IsMLA():
		return fmt.Errorf("num_key_value_heads: must be > 0, got %d", m.KVHeads)
	case m.Vocab <= 0:
		return fmt.Errorf("vocab_size: must be > 0, got %d", m.Vocab)
	case m.Intermediate <= 0 && m.moeLayers() < m.Layers:
		return fmt.Errorf("intermediate_size: must be > 0, got %d", m.Intermediate)
	case m.IsMoE() && (m.MoEIntermediate <= 0 || m.ExpertsPerToken > m.Experts):
		return fmt.Errorf("moe: need moe_intermediate_size > 0 and num_experts_per_tok ≤ num_experts")
	case m.DenseLayers < 0 || m.DenseLayers > m.Layers:
		return fmt.Errorf("first_k_dense_replace: must be in [0, %d], got %d", m.Layers, m.DenseLayers)
	case m.WeightBytes <= 0 || m.KVBytes <= 0:
		return fmt.Errorf("dtype: unknown weight or KV element size")
	case m.IsMLA() && m.QKNopeHeadDim+m.QKRopeHeadDim <= 0:
		// MLA's queries and keys have qk_nope_head_dim + qk_rope_head_dim
		// dimensions per head (the DeepSeek-V2 paper's MLA): with none, attention
		// scores nothing.
		return fmt.Errorf("qk_nope_head_dim, qk_rope_head_dim: an MLA model (kv_lora_rank %d) needs a query/key head size > 0, got %d + %d", m.KVLoraRank, m.QKNopeHeadDim, m.QKRopeHeadDim)
	case m.IsMLA() && m.VHeadDim <= 0:
		return fmt.Errorf("v_head_dim: must be > 0 for an MLA model (kv_lora_rank %d), got %d", m.KVLoraRank, m.VHeadDim)
	}
	return nil
}
