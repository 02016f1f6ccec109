package deploy

import (
	"encoding/json"
	"strconv"

	"github.com/dynosim/dynosim-web/core/config"
)

// Flag names follow each engine's CLI: vLLM's engine arguments (also taken
// by python -m dynamo.vllm), SGLang's server arguments (also taken by
// python -m dynamo.sglang), dynamo.trtllm's arguments and trtllm-serve's.

func itoa(n int) string { return strconv.Itoa(n) }

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// blockSize is the role's block size, the backend default when 0 (the same
// defaults the simulator used: vLLM 64, TRT-LLM 32, SGLang 1).
func blockSize(backend string, kv *config.KVCache) int {
	if kv.BlockSize > 0 {
		return kv.BlockSize
	}
	switch backend {
	case "sglang":
		return 1
	case "trtllm":
		return 32
	}
	return 64
}

// vllmArgs are vLLM engine arguments for one worker (vllm serve and
// python -m dynamo.vllm take the same ones).
func (p *plan) vllmArgs(w worker) []string {
	par, s, kv := w.r.Parallelism, w.r.Scheduler, w.r.KVCache
	a := []string{
		"--tensor-parallel-size", itoa(par.Tensor),
		"--pipeline-parallel-size", itoa(par.Pipeline),
		"--data-parallel-size", itoa(par.AttentionData),
	}
	if par.MoEExpert > 1 {
		a = append(a, "--enable-expert-parallel") // EP spans TP × DP ranks
	}
	if s.MaxSequences > 0 {
		a = append(a, "--max-num-seqs", itoa(s.MaxSequences))
	}
	if s.MaxBatchedTokens > 0 {
		a = append(a, "--max-num-batched-tokens", itoa(s.MaxBatchedTokens))
	}
	if s.ChunkedPrefill {
		a = append(a, "--enable-chunked-prefill")
	} else {
		a = append(a, "--no-enable-chunked-prefill")
	}
	if s.MaxModelLen > 0 {
		a = append(a, "--max-model-len", itoa(s.MaxModelLen))
	}
	a = append(a, "--scheduling-policy", s.Policy)
	if s.AsyncScheduling {
		a = append(a, "--async-scheduling")
	}
	a = append(a, "--block-size", itoa(blockSize("vllm", &kv)))
	switch {
	case kv.Capacity.Blocks > 0:
		a = append(a, "--num-gpu-blocks-override", itoa(kv.Capacity.Blocks))
	case kv.Capacity.Bytes > 0:
		a = append(a, "--kv-cache-memory-bytes", strconv.FormatInt(kv.Capacity.Bytes, 10))
	default:
		a = append(a, "--gpu-memory-utilization", ftoa(kv.Capacity.MemoryFraction))
	}
	kvd := "auto" // bf16/fp16 KV is the model's dtype: auto
	if kv.DType == "fp8" {
		kvd = "fp8"
	}
	a = append(a, "--kv-cache-dtype", kvd)
	if kv.PrefixCaching {
		a = append(a, "--enable-prefix-caching")
	} else {
		a = append(a, "--no-enable-prefix-caching")
	}
	a = append(a, p.dtypeArgs()...)
	if sp := p.cfg.Engine.Speculation; sp.Enabled() {
		c := map[string]any{"method": sp.Kind, "num_speculative_tokens": sp.NumSpeculativeTokens}
		if sp.Kind == "eagle" {
			c["model"] = DraftPlaceholder
		}
		b, _ := json.Marshal(c) // map keys sorted: deterministic
		a = append(a, "--speculative-config", string(b))
	}
	return a
}

// dtypeArgs are vLLM's and SGLang's --dtype/--quantization (same names).
func (p *plan) dtypeArgs() []string {
	switch p.cfg.Engine.DType {
	case "bf16":
		return []string{"--dtype", "bfloat16"}
	case "fp16":
		return []string{"--dtype", "float16"}
	case "fp8":
		return []string{"--quantization", "fp8"}
	}
	return nil
}

// sglangArgs are SGLang server arguments (python -m sglang.launch_server
// and python -m dynamo.sglang take the same ones).
func (p *plan) sglangArgs(w worker) []string {
	par, s, kv, sg := w.r.Parallelism, w.r.Scheduler, w.r.KVCache, w.r.SGLang
	bs := blockSize("sglang", &kv)
	tp := par.Tensor
	dpAttention := par.AttentionData > 1 && par.MoEExpert > 1
	if dpAttention {
		tp *= par.AttentionData // DP attention: the DP ranks are TP ranks of one engine
	}
	a := []string{"--tp", itoa(tp)}
	if par.AttentionData > 1 {
		a = append(a, "--dp", itoa(par.AttentionData))
		if dpAttention {
			a = append(a, "--enable-dp-attention")
		}
	}
	if par.Pipeline > 1 {
		a = append(a, "--pp-size", itoa(par.Pipeline))
	}
	if par.MoEExpert > 1 {
		a = append(a, "--ep-size", itoa(par.MoEExpert))
	}
	a = append(a, "--page-size", itoa(bs))
	if s.MaxSequences > 0 {
		a = append(a, "--max-running-requests", itoa(s.MaxSequences))
	}
	chunk := -1 // SGLang's "off"
	if s.ChunkedPrefill {
		chunk = sg.ChunkedPrefillSize
	}
	a = append(a, "--chunked-prefill-size", itoa(chunk), "--max-prefill-tokens", itoa(sg.MaxPrefillTokens))
	policy := sg.SchedulePolicy
	if policy == "fifo" {
		policy = "fcfs"
	}
	a = append(a, "--schedule-policy", policy, "--schedule-conservativeness", ftoa(sg.ScheduleConservativeness))
	switch {
	case kv.Capacity.Blocks > 0:
		a = append(a, "--max-total-tokens", itoa(kv.Capacity.Blocks*bs))
	case kv.Capacity.FractionUnset && p.cfg.Engine.Semantics == "real":
		// No memory_fraction: SGLang derives its own mem_fraction_static
		// from the GPU, as the simulation did (timing.SGLangMemFractionStatic).
	default:
		a = append(a, "--mem-fraction-static", ftoa(kv.Capacity.MemoryFraction))
	}
	kvd := "auto"
	if kv.DType == "fp8" {
		kvd = "fp8_e4m3"
	}
	a = append(a, "--kv-cache-dtype", kvd)
	if !kv.PrefixCaching {
		a = append(a, "--disable-radix-cache")
	}
	if s.MaxModelLen > 0 {
		a = append(a, "--context-length", itoa(s.MaxModelLen))
	}
	if !s.AsyncScheduling {
		a = append(a, "--disable-overlap-schedule") // as simulated; SGLang overlaps by default
	}
	if s.EnableMixedChunk {
		a = append(a, "--enable-mixed-chunk") // as simulated (core/engine/sglang_loop.go)
	}
	a = append(a, p.dtypeArgs()...)
	if sp := p.cfg.Engine.Speculation; sp.Enabled() {
		alg := "NEXTN"
		if sp.Kind == "eagle" {
			alg = "EAGLE"
		}
		a = append(a, "--speculative-algorithm", alg, "--speculative-num-steps", itoa(sp.NumSpeculativeTokens),
			"--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", itoa(sp.NumSpeculativeTokens+1))
		if sp.Kind == "eagle" {
			a = append(a, "--speculative-draft-model-path", DraftPlaceholder)
		}
	}
	return a
}

// trtllmParallel is TRT-LLM's tensor size (attention DP runs the DP ranks
// as TP ranks with enable_attention_dp) and whether attention DP is on.
func trtllmParallel(par config.Parallelism) (tp int, adp bool) {
	return par.Tensor * par.AttentionData, par.AttentionData > 1
}

// trtllmOptions are the LLM API options neither CLI has a flag for; both
// dynamo.trtllm (--override-engine-args) and trtllm-serve
// (--extra_llm_api_options, a YAML file: JSON is YAML) take them.
func (p *plan) trtllmOptions(w worker) string {
	par, s, kv := w.r.Parallelism, w.r.Scheduler, w.r.KVCache
	_, adp := trtllmParallel(par)
	kvc := map[string]any{
		"enable_block_reuse": kv.PrefixCaching,
		"tokens_per_block":   blockSize("trtllm", &kv),
	}
	if kv.Capacity.Blocks > 0 {
		kvc["max_tokens"] = kv.Capacity.Blocks * blockSize("trtllm", &kv)
	} else {
		kvc["free_gpu_memory_fraction"] = kv.Capacity.MemoryFraction
	}
	if kv.DType == "fp8" {
		kvc["dtype"] = "fp8"
	}
	o := map[string]any{
		"enable_chunked_prefill":    s.ChunkedPrefill,
		"enable_attention_dp":       adp,
		"disable_overlap_scheduler": !s.AsyncScheduling,
		"kv_cache_config":           kvc,
	}
	if s.BatchWaitTimeoutIters > 0 || s.BatchWaitMaxTokensRatio > 0 {
		// TensorRT-LLM's LLM API options of the same names, as simulated
		// (core/engine/batchwait.go); absent when off, TRT-LLM's default.
		o["batch_wait_timeout_iters"] = s.BatchWaitTimeoutIters
		o["batch_wait_max_tokens_ratio"] = s.BatchWaitMaxTokensRatio
	}
	switch p.cfg.Engine.DType {
	case "bf16":
		o["dtype"] = "bfloat16"
	case "fp16":
		o["dtype"] = "float16"
	}
	if w.role != "aggregated" {
		o["cache_transceiver_config"] = map[string]any{"backend": "DEFAULT"}
	}
	b, _ := json.Marshal(o)
	return string(b)
}

// trtllmFlags name the same engine settings in TRT-LLM's two command
// lines: python -m dynamo.trtllm's dashed flags and trtllm-serve's
// underscored ones.
type trtllmFlags struct{ tp, pp, ep, batch, tokens, seqLen, memFrac string }

var (
	dynamoTRTLLM = trtllmFlags{"--tensor-parallel-size", "--pipeline-parallel-size", "--expert-parallel-size",
		"--max-batch-size", "--max-num-tokens", "--max-seq-len", "--free-gpu-memory-fraction"}
	serveTRTLLM = trtllmFlags{"--tp_size", "--pp_size", "--ep_size",
		"--max_batch_size", "--max_num_tokens", "--max_seq_len", "--kv_cache_free_gpu_memory_fraction"}
)

// parallel is the worker's parallelism in f's names.
func (f trtllmFlags) parallel(w worker) []string {
	par := w.r.Parallelism
	tp, _ := trtllmParallel(par)
	a := []string{f.tp, itoa(tp), f.pp, itoa(par.Pipeline)}
	if par.MoEExpert > 1 {
		a = append(a, f.ep, itoa(par.MoEExpert))
	}
	return a
}

// limits are the worker's batch, token and length limits and its KV memory
// fraction (when its pool is sized from memory) in f's names, appended to a.
func (f trtllmFlags) limits(a []string, w worker) []string {
	s := w.r.Scheduler
	if s.MaxSequences > 0 {
		a = append(a, f.batch, itoa(s.MaxSequences))
	}
	if s.MaxBatchedTokens > 0 {
		a = append(a, f.tokens, itoa(s.MaxBatchedTokens))
	}
	if s.MaxModelLen > 0 {
		a = append(a, f.seqLen, itoa(s.MaxModelLen))
	}
	if w.r.KVCache.Capacity.Blocks == 0 {
		a = append(a, f.memFrac, ftoa(w.r.KVCache.Capacity.MemoryFraction))
	}
	return a
}

// trtllmDynamoArgs are python -m dynamo.trtllm's arguments.
func (p *plan) trtllmDynamoArgs(w worker) []string {
	a := append(dynamoTRTLLM.parallel(w), "--kv-block-size", itoa(blockSize("trtllm", &w.r.KVCache)))
	return append(dynamoTRTLLM.limits(a, w), "--override-engine-args", p.trtllmOptions(w))
}

// trtllmServeArgs are trtllm-serve's arguments but for the options file.
func (p *plan) trtllmServeArgs(w worker) []string {
	return serveTRTLLM.limits(append([]string{"--backend", "pytorch"}, serveTRTLLM.parallel(w)...), w)
}

// dynamoArgs are the worker's python -m dynamo.<backend> arguments after
// the model, with its disaggregation role (upstream's deploy examples).
func (p *plan) dynamoArgs(w worker) []string {
	var a []string
	switch p.backend {
	case "vllm":
		a = p.vllmArgs(w)
		switch w.role {
		case "prefill":
			a = append(a, "--is-prefill-worker")
		case "decode":
			a = append(a, "--is-decode-worker")
		}
	case "sglang":
		a = p.sglangArgs(w)
		if w.role != "aggregated" {
			a = append(a, "--disaggregation-mode", w.role, "--disaggregation-transfer-backend", "nixl")
		}
	case "trtllm":
		a = p.trtllmDynamoArgs(w)
		if w.role != "aggregated" {
			a = append(a, "--disaggregation-mode", w.role)
		}
	}
	return a
}

// modelFlag is the worker's model flag name.
func (p *plan) modelFlag() string {
	if p.backend == "vllm" {
		return "--model"
	}
	return "--model-path"
}
