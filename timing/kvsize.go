package timing

import (
	"fmt"
	"math"
)

// KVBytesPerToken is the KV-cache footprint of one token on one GPU of a
// tensor-parallel group of size tensor (tensor ≤ 0 means 1).
//
//   - Standard attention: num_hidden_layers × 2 (K and V) ×
//     ceil(num_kv_heads / tensor) × head_dim × kv element bytes. KV heads
//     are split across TP ranks; with more ranks than KV heads each rank
//     holds one replicated head.
//   - MLA (DeepSeek): num_hidden_layers × (kv_lora_rank + qk_rope_head_dim)
//     × kv element bytes — the compressed latent that vLLM/SGLang cache,
//     replicated on every TP rank.
//
// Deliberate differences from the reference (mocker.md §7.1): it ignores
// an explicit head_dim (using hidden_size / num_attention_heads) and has
// no MLA case, so it sizes Qwen3 (head_dim 128 ≠ hidden/heads) and
// DeepSeek-V3 (latent 576 per layer instead of 2×128×(128+64)) wrongly;
// we use what the engines actually allocate. With tensor == 1 and no
// explicit head_dim or MLA the two agree (e.g. §7.1's 256-byte example).
func KVBytesPerToken(m ModelSpec, tensor int) int64 {
	tensor = max(tensor, 1)
	kvb := int64(max(m.KVBytes, 1))
	if m.IsMLA() {
		return int64(m.Layers) * int64(m.KVLoraRank+m.QKRopeHeadDim) * kvb
	}
	heads := (m.KVHeads + tensor - 1) / tensor
	return int64(m.Layers) * 2 * int64(heads) * int64(m.headDim()) * kvb
}

// Parallelism is a worker's parallel layout (mocker.md §9.2). Zero fields
// mean 1. Pipeline stages (pipeline.go) of Tensor × AttentionData GPUs
// each form one worker; every stage holds its share of the decoder layers
// (PipelineLayers) and within a stage attention and dense
// layers are split Tensor ways and replicated per attention-data rank;
// routed experts are split MoEExpert ways (expert parallel) and each
// expert MoETensor ways, over all the worker's GPUs. When both MoE fields
// are 1 on a multi-GPU worker, experts are tensor-parallel over all its
// GPUs (vLLM's default), i.e. MoETensor = Tensor × AttentionData.
type Parallelism struct {
	Tensor        int `json:"tensor"`
	AttentionData int `json:"attention_data"`
	MoETensor     int `json:"moe_tensor"`
	MoEExpert     int `json:"moe_expert"`
	Pipeline      int `json:"pipeline,omitempty"`
}

// Normalize fills defaults and checks Tensor × AttentionData = MoETensor ×
// MoEExpert.
func (p Parallelism) Normalize() (Parallelism, error) {
	one := func(x int) int { return max(x, 1) }
	q := Parallelism{Tensor: one(p.Tensor), AttentionData: one(p.AttentionData), MoETensor: one(p.MoETensor), MoEExpert: one(p.MoEExpert), Pipeline: one(p.Pipeline)}
	gpus := q.Tensor * q.AttentionData
	if q.MoETensor == 1 && q.MoEExpert == 1 {
		q.MoETensor = gpus
	}
	if q.MoETensor*q.MoEExpert != gpus {
		return q, fmt.Errorf("parallelism: tensor × attention_data (%d × %d) must equal moe_tensor × moe_expert (%d × %d)",
			q.Tensor, q.AttentionData, q.MoETensor, q.MoEExpert)
	}
	return q, nil
}

// GPUs is the number of GPUs of one worker: every pipeline stage's.
func (p Parallelism) GPUs() int {
	return max(p.Tensor, 1) * max(p.AttentionData, 1) * max(p.Pipeline, 1)
}

// WeightBytesPerGPU is the model weight memory one GPU of the worker holds
// (p must be normalized): attention, dense MLP, shared experts and the
// embedding/lm_head split Tensor ways; routed experts split
// MoETensor × MoEExpert ways. With Pipeline > 1 it is the heaviest
// stage's (stageWeightBytes).
func WeightBytesPerGPU(m ModelSpec, p Parallelism) float64 {
	if p.Pipeline > 1 {
		var most float64
		for _, s := range stages(m, p) {
			most = max(most, stageWeightBytes(m, p, s))
		}
		return most
	}
	total, _ := m.Params()
	routed := float64(m.moeLayers()) * float64(m.Experts) * m.expertParams()
	return ((total-routed)/float64(max(p.Tensor, 1)) + routed/float64(max(p.MoETensor*p.MoEExpert, 1))) * m.WeightBytes
}

// DefaultRuntimeReserveBytes is the memory EstimateBlocks sets aside on
// each GPU besides weights and KV: CUDA context, NCCL buffers, CUDA graphs
// and the activation peak of a profiling forward pass. 2 GiB is our
// estimate of what vLLM's memory profiler typically leaves for an 8–70B
// model at max_num_batched_tokens 8192 (its startup log reports
// "non-torch memory" ≈ 0.5–1 GiB plus an activation peak ≈ 1–1.5 GiB).
const DefaultRuntimeReserveBytes = 2 << 30

// EstimateBlocks is kv_cache.capacity {type: default, memory_fraction}:
// the number of KV blocks of blockSize tokens that fit on each GPU of the
// worker (= per attention-data rank, whose GPUs all hold the same blocks):
//
//	floor((memory × memoryFraction − weights per GPU − reserve) /
//	      (blockSize × KVBytesPerToken(m, p.Tensor)))
//
// reserve = DefaultRuntimeReserveBytes + extraReserveBytes (e.g. the
// config's cuda_graph_reserved_bytes). It fails, naming the numbers, when
// the weights do not fit. With Pipeline > 1 every stage sizes its own
// pool from its own weights and KV bytes per token and the smallest wins
// (estimatePipelineBlocks): still the blocks on each GPU, each block a
// block of tokens across all the worker's layers; a pipeline deeper than
// the model's layers is refused (CheckPipeline).
func EstimateBlocks(g GPUSpec, m ModelSpec, p Parallelism, memoryFraction float64, blockSize int, extraReserveBytes float64) (int, error) {
	return EstimateBlocksReserve(g, m, p, memoryFraction, blockSize, DefaultRuntimeReserveBytes+max(extraReserveBytes, 0))
}

// EstimateBlocksReserve is EstimateBlocks with the whole reserve given:
// SGLang's pool keeps only SGLangNonTorchBytes outside its fraction.
func EstimateBlocksReserve(g GPUSpec, m ModelSpec, p Parallelism, memoryFraction float64, blockSize int, reserve float64) (int, error) {
	if !(memoryFraction > 0 && memoryFraction <= 1) {
		return 0, fmt.Errorf("memory_fraction: must be in (0, 1], got %v", memoryFraction)
	}
	if blockSize <= 0 {
		return 0, fmt.Errorf("block_size: must be > 0, got %d", blockSize)
	}
	p, err := p.Normalize()
	if err != nil {
		return 0, err
	}
	if p.Pipeline > 1 {
		if err := CheckPipeline(m, p); err != nil {
			return 0, err
		}
		return estimatePipelineBlocks(g, m, p, memoryFraction, blockSize, reserve)
	}
	w := WeightBytesPerGPU(m, p)
	free := g.MemoryBytes*memoryFraction - w - reserve
	perBlock := float64(blockSize) * float64(KVBytesPerToken(m, p.Tensor))
	if !(perBlock > 0) {
		return 0, fmt.Errorf("kv_cache: %s has no KV bytes per token", m.Name)
	}
	if free < perBlock {
		return 0, NotFit("kv_cache: %s does not fit on %s with tensor=%d: weights %.1f GiB/GPU + reserve %.1f GiB exceed %.0f%% of %.1f GiB",
			m.Name, g.Name, p.Tensor, w/(1<<30), reserve/(1<<30), 100*memoryFraction, g.MemoryBytes/(1<<30))
	}
	return int(math.Floor(free / perBlock)), nil
}
