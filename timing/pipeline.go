package timing

import (
	"errors"
	"fmt"
	"math"
)

// Pipeline parallelism (issue 30 item 2): a worker of Pipeline stages, each
// stage Tensor × AttentionData GPUs holding a contiguous run of the decoder
// layers. This file sizes a stage (weights and KV per GPU) and prices the
// stage-to-stage activation transfers of one pass; the scheduling half (one
// virtual engine per stage, each with its own KV pool and pass clock, as
// vLLM V0's `pipeline_parallel_size` schedulers and vLLM V1's pp batches in
// flight) lives in core/sim and core/engine.

// PipelineLayers is how vLLM splits numLayers decoder layers over pp
// stages (vllm/distributed/utils.py get_pp_indices, without the
// VLLM_PP_LAYER_PARTITION override): numLayers/pp each, and the remainder
// one layer each to the stages from the second-to-last backwards — the
// last stage is skipped because it also runs the final norm and lm_head,
// and with a remainder ≤ pp−2 the first stage (the embedding) is skipped
// too. E.g. 61 layers over 4 stages: [15 15 16 15]; 3 over 2: [2 1].
// pp ≤ 1 gives one stage of all layers; pp > numLayers leaves stages with
// no layer (vLLM refuses nothing here, but such a stage holds no KV:
// callers refuse it, CheckPipeline).
func PipelineLayers(numLayers, pp int) []int {
	pp = max(pp, 1)
	parts := make([]int, pp)
	for i := range parts {
		parts[i] = numLayers / pp
	}
	for i := 2; i < numLayers%pp+2; i++ {
		parts[pp-i]++
	}
	return parts
}

// CheckPipeline refuses a pipeline deeper than the model has decoder
// layers: vLLM would build a stage with no layer, holding no KV cache.
func CheckPipeline(m ModelSpec, p Parallelism) error {
	if pp := max(p.Pipeline, 1); pp > m.Layers {
		return fmt.Errorf("%w: %d stages but %s has %d decoder layers (num_hidden_layers); give pipeline ≤ %d", ErrPipeline, pp, m.Name, m.Layers, m.Layers)
	}
	return nil
}

// ErrPipeline marks a pipeline the model cannot be split into; its text
// is the key, so a caller prefixes the role's path.
var ErrPipeline = errors.New("parallelism.pipeline")

// stage is one pipeline stage's share of the model: its decoder layers,
// how many of them are MoE layers, and whether it holds the input
// embedding (the first stage) or lm_head (the last).
type stage struct {
	layers, moeLayers int
	first, last       bool
}

// stages splits m over p.Pipeline stages (PipelineLayers). MoE models
// (DeepSeek's first_k_dense_replace) have their DenseLayers dense layers
// first, so those fall in the first stages.
func stages(m ModelSpec, p Parallelism) []stage {
	parts := PipelineLayers(m.Layers, p.Pipeline)
	out := make([]stage, len(parts))
	start := 0
	dense := m.Layers - m.moeLayers()
	for i, n := range parts {
		end := start + n
		moe := end - max(start, dense)
		out[i] = stage{layers: n, moeLayers: min(max(moe, 0), n), first: i == 0, last: i == len(parts)-1}
		start = end
	}
	return out
}

// stageWeightBytes is the weight memory of one GPU of stage s (p
// normalized, Pipeline > 1): its layers' attention, dense MLPs, shared
// experts and routers split Tensor ways, its routed experts split
// MoETensor × MoEExpert ways, and a vocab × hidden matrix split Tensor ways
// on the first stage (the input embedding) and on the last (lm_head). A
// tied embedding is held twice under pipeline parallelism: vLLM's
// LlamaModel builds embed_tokens on the last rank too when
// tie_word_embeddings, to tie lm_head to it (vllm/model_executor/models/
// llama.py).
func stageWeightBytes(m ModelSpec, p Parallelism, s stage) float64 {
	h := float64(m.Hidden)
	moeL := float64(s.moeLayers)
	rest := float64(s.layers)*m.attnParams() + float64(s.layers-s.moeLayers)*3*h*float64(m.Intermediate)
	rest += moeL * (float64(m.SharedExperts)*m.expertParams() + h*float64(m.Experts))
	if s.first {
		rest += float64(m.Vocab) * h
	}
	if s.last {
		rest += float64(m.Vocab) * h
	}
	routed := moeL * float64(m.Experts) * m.expertParams()
	return (rest/float64(max(p.Tensor, 1)) + routed/float64(max(p.MoETensor*p.MoEExpert, 1))) * m.WeightBytes
}

// stageKVBytesPerToken is the KV footprint of one token on one GPU of a
// stage of layers decoder layers.
func stageKVBytesPerToken(m ModelSpec, tensor, layers int) int64 {
	m.Layers = layers
	return KVBytesPerToken(m, tensor)
}

// KVBytesPerTokenPerGPU is the KV footprint of one token on one GPU of the
// worker: KVBytesPerToken(m, p.Tensor) without pipeline parallelism, else
// that of the stage with the most layers (each stage caches its own
// layers' K and V).
func KVBytesPerTokenPerGPU(m ModelSpec, p Parallelism) int64 {
	if p.Pipeline <= 1 {
		return KVBytesPerToken(m, p.Tensor)
	}
	var most int64
	for _, s := range stages(m, p) {
		most = max(most, stageKVBytesPerToken(m, p.Tensor, s.layers))
	}
	return most
}

// stageFit is one GPU of a stage: its weight bytes and KV bytes per token.
type stageFit struct {
	weights, kvPerToken float64
}

func stageFits(m ModelSpec, p Parallelism) []stageFit {
	ss := stages(m, p)
	out := make([]stageFit, len(ss))
	for i, s := range ss {
		out[i] = stageFit{stageWeightBytes(m, p, s), float64(stageKVBytesPerToken(m, p.Tensor, s.layers))}
	}
	return out
}

// estimatePipelineBlocks is EstimateBlocks for Pipeline > 1: each stage's
// GPUs size their own pool from their own weights and layers, and the
// worker keeps the smallest, as vLLM does (V0: the executor takes the
// minimum of every worker's determine_num_available_blocks; V1:
// vllm/v1/core/kv_cache_utils.py sets every rank's num_blocks to the
// smallest among them). A block holds blockSize tokens of every layer, so
// the count is the tokens the whole worker (all stages) can hold.
func estimatePipelineBlocks(g GPUSpec, m ModelSpec, p Parallelism, memoryFraction float64, blockSize int, reserve float64) (int, error) {
	blocks := math.MaxInt
	for i, f := range stageFits(m, p) {
		free := g.MemoryBytes*memoryFraction - f.weights - reserve
		perBlock := float64(blockSize) * f.kvPerToken
		if !(perBlock > 0) {
			return 0, fmt.Errorf("kv_cache: %s has no KV bytes per token on pipeline stage %d", m.Name, i)
		}
		if free < perBlock {
			return 0, NotFit("kv_cache: %s does not fit on %s with tensor=%d pipeline=%d: stage %d's weights %.1f GiB/GPU + reserve %.1f GiB exceed %.0f%% of %.1f GiB",
				m.Name, g.Name, p.Tensor, p.Pipeline, i, f.weights/(1<<30), reserve/(1<<30), 100*memoryFraction, g.MemoryBytes/(1<<30))
		}
		blocks = min(blocks, int(math.Floor(free/perBlock)))
	}
	return blocks, nil
}

// pipelineMemory is Memory for Pipeline > 1: the stage with the least
// memory left is the one reported.
func pipelineMemory(g GPUSpec, m ModelSpec, p Parallelism, blocks, blockSize int, reserve float64) MemoryFit {
	var worst MemoryFit
	for i, f := range stageFits(m, p) {
		fit := MemoryFit{GPUBytes: g.MemoryBytes, WeightsBytes: f.weights, KVBytes: float64(blocks) * float64(blockSize) * f.kvPerToken, ReserveBytes: reserve}
		fit.FreeBytes = fit.GPUBytes - fit.WeightsBytes - fit.KVBytes - fit.ReserveBytes
		if i == 0 || fit.FreeBytes < worst.FreeBytes {
			worst = fit
		}
	}
	return worst
}

// pipelineTransferMs prices the stage-to-stage activation transfers of
// one pass of tokens tokens through all stages: Pipeline − 1 boundaries,
// each sending the IntermediateTensors of a Llama-style decoder (vLLM's
// models return hidden_states and residual, tokens × hidden each, in the
// activation dtype). vLLM's worker sends them with
// get_pp_group().send_tensor_dict(..., all_gather_group=get_tp_group())
// (vllm/v1/worker/gpu_worker.py; vllm/distributed/parallel_state.py): each
// of the Tensor ranks sends a 1/Tensor slice to its peer of the next stage
// by NCCL send/recv (SendRecvMs, sendRecvRows), then the receiving stage
// all-gathers the slices, priced as an all-reduce of half the bytes (a
// ring all-gather moves (tp−1)/tp of the message, a ring all-reduce
// 2(tp−1)/tp) outside CUDA graphs (the send and receive run in the worker,
// around the captured forward). The stages are assumed to share the GPU's
// fabric (one NVLink/PCIe domain); a multi-node pipeline over InfiniBand is
// not modelled.
func (r *Roofline) pipelineTransferMs(tokens float64) float64 {
	pp := r.Par.Pipeline
	if pp <= 1 || !(tokens > 0) {
		return 0
	}
	g := r.GPU
	tp := r.Par.Tensor
	bytes := 2 * tokens * float64(r.Model.Hidden) * activationBytes
	ms := SendRecvMs(g.Fabric, g.LinkBW, bytes/float64(tp))
	if tp > 1 {
		ms += AllReduceMs(g.Fabric, g.LinkBW, tp, bytes/2, false)
	}
	return float64(pp-1) * ms
}
