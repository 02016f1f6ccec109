package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/workload"
	"github.com/dynosim/dynosim-web/kv/tiers"
	"github.com/dynosim/dynosim-web/timing"
)

// ErrUnsupported marks a combination the simulator (like the reference)
// does not support, e.g. disaggregated TensorRT-LLM (errors.Is), so a
// search can record the reason (backend_topology).
var ErrUnsupported = errors.New("unsupported combination")

type unsupportedErr struct{ msg string }

func (e unsupportedErr) Error() string        { return e.msg }
func (e unsupportedErr) Is(target error) bool { return target == ErrUnsupported }

func unsupported(msg string) error { return unsupportedErr{msg} }

// Bounds on sizes a config may ask for (README, Configuration): past them a
// run would exhaust memory or time before it could report.
const (
	MaxRequests          = 10_000_000 // traffic.stop.requests
	MaxReplicas          = 4096       // parallelism.replicas
	MaxParallel          = 1024       // tensor, pipeline, attention_data, moe_tensor, moe_expert
	MaxGPUs              = 1 << 20    // replicas × GPUs per worker
	MinRequestsPerSecond = 1e-6       // poisson, constant_rate (a mean gap of 31 years)
	MaxIntervalMs        = 1e12       // constant_rate interval (31 years)
)

func oneOf(path, v string, allowed ...string) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	return fmt.Errorf("%s: must be one of %s, got %q", path, strings.Join(allowed, ", "), v)
}

// Validate checks values that YAML types cannot express.
func (c *Config) Validate() error {
	if err := c.validateChoices(); err != nil {
		return err
	}
	if err := c.Traffic.validateBounds(); err != nil {
		return err
	}
	if err := c.Traffic.Warmup.validate(); err != nil {
		return err
	}
	if err := c.validateRouterAndSLA(); err != nil {
		return err
	}
	if err := c.Traffic.validateLoadSource(); err != nil {
		return err
	}
	if err := c.Engine.Speculation.validate(); err != nil {
		return err
	}
	if err := c.Planner.validate(); err != nil {
		return err
	}
	return c.validateWorkers()
}

// validateChoices checks the enumerated fields and the router weights that
// must not be negative, in that order.
func (c *Config) validateChoices() error {
	t := &c.Traffic
	checks := []error{
		oneOf("traffic.source.type", t.Source.Type, "synthetic", "trace"),
		oneOf("traffic.source.format", t.Source.Format, "mooncake", "azure"),
		oneOf("engine.mode", c.Engine.Mode, "aggregated", "disaggregated"),
		oneOf("engine.semantics", c.Engine.Semantics, "real", "mocker"),
		oneOf("engine.backend", c.Engine.Backend, "vllm", "sglang", "trtllm"),
		oneOf("router.policy", c.Router.Policy, "round_robin", "random", "kv_router"),
		oneOf("router.kv.queue.policy", c.Router.KV.Queue.Policy, "fcfs", "lcfs", "wspt"),
		oneOf("planner.policy", c.Planner.Policy, "disabled", "enabled"),
		oneOf("planner.target", c.Planner.Target, "throughput", "latency", "sla", "load"),
		oneOf("planner.load_predictor", c.Planner.LoadPredictor, "constant", "arima", "kalman", "prophet"),
		oneOf("engine.dtype", c.Engine.DType, "auto", "bf16", "fp16", "fp8", "fp4"),
	}
	if t.Load.Type != "" {
		checks = append(checks, oneOf("traffic.load.type", t.Load.Type, "trace_timestamps", "concurrency", "poisson", "constant_rate"))
	}
	for _, k := range []struct {
		path string
		v    float64
	}{
		{"router.overlap_score_credit", c.Router.OverlapScoreCredit},
		{"router.prefill_load_scale", c.Router.PrefillLoadScale},
		{"router.temperature", c.Router.Temperature},
		{"router.kv.overlap_score_credit_decay", c.Router.KV.OverlapScoreCreditDecay},
		{"router.kv.decode_active_request_weight", c.Router.KV.DecodeActiveRequestWeight},
	} {
		if k.v < 0 {
			checks = append(checks, fmt.Errorf("%s: must be ≥ 0, got %v", k.path, k.v))
		}
	}
	for _, k := range []struct {
		path string
		v    float64
	}{
		{"router.host_cache_hit_weight", c.Router.HostCacheHitWeight},
		{"router.disk_cache_hit_weight", c.Router.DiskCacheHitWeight},
	} {
		if !(k.v >= 0 && k.v <= 1e6) {
			checks = append(checks, fmt.Errorf("%s: must be in [0, 1e6] (prefill blocks credited per lower-tier block), got %v", k.path, k.v))
		}
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}

// validateBounds checks the traffic's sizes, rates and stop conditions.
func (t *Traffic) validateBounds() error {
	if err := t.Source.checkDistributions(); err != nil {
		return err
	}
	switch {
	case t.Source.BlockSize < 1:
		return fmt.Errorf("traffic.source.block_size: must be ≥ 1, got %d", t.Source.BlockSize)
	case t.Source.BlockSize > workload.MaxRequestTokens:
		return fmt.Errorf("traffic.source.block_size: must be ≤ %d, got %d", workload.MaxRequestTokens, t.Source.BlockSize)
	case t.Source.Type == "synthetic" && t.Source.InputTokens.Dist == "" && t.Source.InputTokens.N < 1:
		return fmt.Errorf("traffic.source.input_tokens: must be ≥ 1, got %d", t.Source.InputTokens.N)
	case t.Source.OutputTokens.Dist == "" && t.Source.OutputTokens.N < 0:
		return fmt.Errorf("traffic.source.output_tokens: must be ≥ 0, got %d", t.Source.OutputTokens.N)
	case t.Source.Type == "synthetic" && t.Source.InputTokens.Dist == "" && t.Source.InputTokens.N > workload.MaxRequestTokens:
		return fmt.Errorf("traffic.source.input_tokens: must be ≤ %d, got %d", workload.MaxRequestTokens, t.Source.InputTokens.N)
	case t.Source.OutputTokens.Dist == "" && t.Source.OutputTokens.N > workload.MaxRequestTokens:
		return fmt.Errorf("traffic.source.output_tokens: must be ≤ %d, got %d", workload.MaxRequestTokens, t.Source.OutputTokens.N)
	case t.Stop.Requests > MaxRequests:
		return fmt.Errorf("traffic.stop.requests: must be ≤ %d, got %d", MaxRequests, t.Stop.Requests)
	case !(t.Load.Speedup > 0):
		return fmt.Errorf("traffic.load.speedup: must be > 0, got %v", t.Load.Speedup)
	case t.Load.Concurrency < 1:
		return fmt.Errorf("traffic.load.concurrency: must be ≥ 1, got %d", t.Load.Concurrency)
	case t.Load.RequestsPerSecond < 0:
		return fmt.Errorf("traffic.load.requests_per_second: must be ≥ 0, got %v", t.Load.RequestsPerSecond)
	case !(t.Load.RampUpSeconds >= 0 && t.Load.RampUpSeconds <= MaxIntervalMs/1000):
		return fmt.Errorf("traffic.load.ramp_up_seconds: must be in [0, %g], got %v", MaxIntervalMs/1000, t.Load.RampUpSeconds)
	case t.Load.IntervalMs < 0:
		return fmt.Errorf("traffic.load.interval_ms: must be ≥ 0, got %v", t.Load.IntervalMs)
	case t.Load.IntervalMs > MaxIntervalMs:
		return fmt.Errorf("traffic.load.interval_ms: must be ≤ %g (31 years), got %v", MaxIntervalMs, t.Load.IntervalMs)
	case (t.Load.Type == "poisson" || t.Load.Type == "constant_rate" && t.Load.IntervalMs == 0) && t.Source.Type == "synthetic" && !(t.Load.RequestsPerSecond >= MinRequestsPerSecond):
		hint := ""
		if t.Load.Type == "constant_rate" {
			hint = " (or give interval_ms)"
		}
		return fmt.Errorf("traffic.load.requests_per_second: must be ≥ %g for %s%s, got %v", MinRequestsPerSecond, t.Load.Type, hint, t.Load.RequestsPerSecond)
	case t.Stop.Requests < 0:
		return fmt.Errorf("traffic.stop.requests: must be ≥ 0, got %d", t.Stop.Requests)
	case t.Stop.MaxVirtualTimeSeconds < 0:
		return fmt.Errorf("traffic.stop.max_virtual_time_seconds: must be ≥ 0, got %v", t.Stop.MaxVirtualTimeSeconds)
	}
	return nil
}

// validateRouterAndSLA checks the unsupported backend topology, the router's
// bounds and the SLA.
func (c *Config) validateRouterAndSLA() error {
	switch {
	case c.Engine.Mode == "disaggregated" && c.Engine.Backend == "trtllm":
		return unsupported("engine.mode: disaggregated serving is not supported with backend trtllm (GUARANTEED_NO_EVICT cannot take over a transferred prompt); use mode aggregated, or backend vllm or sglang")
	case c.Router.PrefillLoadModel.Type != "none" && c.Router.PrefillLoadModel.Type != "aic":
		return fmt.Errorf("router.prefill_load_model.type: must be one of none, aic, got %q", c.Router.PrefillLoadModel.Type)
	case c.Router.KV.Queue.Threshold < 0 || c.Router.KV.Queue.Threshold > 1e6:
		return fmt.Errorf("router.kv.queue.threshold: must be in [0, 1e6] (0: no queue), got %v", c.Router.KV.Queue.Threshold)
	case !(c.Router.KV.TTLSeconds > 0) || c.Router.KV.TTLSeconds > 1e6:
		return fmt.Errorf("router.kv.ttl_seconds: must be in (0, 1e6], got %v", c.Router.KV.TTLSeconds)
	case c.Evaluation.SLA.E2EMs > 0 && (c.Evaluation.SLA.TTFTMs > 0 || c.Evaluation.SLA.ITLMs > 0):
		return fmt.Errorf("evaluation.sla.e2e_ms: cannot be combined with ttft_ms/itl_ms")
	case c.Evaluation.SLA.TTFTMs < 0 || c.Evaluation.SLA.ITLMs < 0 || c.Evaluation.SLA.E2EMs < 0:
		return fmt.Errorf("evaluation.sla: bounds must be ≥ 0")
	}
	return nil
}

// validateLoadSource checks that the load type suits the source type.
func (t *Traffic) validateLoadSource() error {
	if t.Source.Type == "trace" {
		if t.Load.Type == "poisson" || t.Load.Type == "constant_rate" {
			return fmt.Errorf("traffic.load.type: %s needs a synthetic source; traces use trace_timestamps or concurrency", t.Load.Type)
		}
	} else if t.Load.Type == "trace_timestamps" {
		return fmt.Errorf("traffic.load.type: trace_timestamps needs a trace source")
	}
	return nil
}

// validateWorkers checks each role of the engine's mode: prefill and decode
// (and the KV transfer between them) when disaggregated, else aggregated.
func (c *Config) validateWorkers() error {
	if c.Engine.Mode == "disaggregated" {
		if err := c.Engine.KVTransfer.validate(); err != nil {
			return err
		}
		for _, r := range []struct {
			path string
			role *Role
		}{{"engine.workers.prefill", &c.Engine.Workers.Prefill}, {"engine.workers.decode", &c.Engine.Workers.Decode}} {
			if r.role.Scheduler.AsyncScheduling {
				return fmt.Errorf("%s.scheduler.async_scheduling: not simulated in disaggregated mode (the handoff times admissions itself); use mode aggregated or leave it false", r.path)
			}
			if err := c.validateRole(r.path, r.role); err != nil {
				return err
			}
		}
		return nil
	}
	return c.validateRole("engine.workers.aggregated", &c.Engine.Workers.Aggregated)
}

// MaxTransferBandwidth bounds kv_transfer.bandwidth_gb_per_second (1 PB/s).
const MaxTransferBandwidth = 1e6

func (k *KVTransfer) validate() error {
	const p = "engine.kv_transfer"
	if err := oneOf(p+".handoff", k.Handoff, "bootstrap", "direct"); err != nil {
		return err
	}
	if err := oneOf(p+".timing_mode", k.TimingMode, "destination_missing", "full_prompt"); err != nil {
		return err
	}
	if bw := k.BandwidthGBps; bw != nil && !(*bw >= 0 && *bw <= MaxTransferBandwidth) {
		return fmt.Errorf("%s.bandwidth_gb_per_second: must be null or in [0, %g] (0: no delay), got %v", p, MaxTransferBandwidth, *bw)
	}
	if _, err := k.BytesPerTokenValue(); err != nil {
		return err
	}
	return nil
}

// BytesPerTokenValue is bytes_per_token as a number; 0 means auto.
func (k *KVTransfer) BytesPerTokenValue() (float64, error) {
	if k.BytesPerToken == "auto" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(k.BytesPerToken, 64)
	if err != nil || !(v > 0 && v <= 1<<40) {
		return 0, fmt.Errorf("engine.kv_transfer.bytes_per_token: must be auto or a number in (0, 2^40], got %q", k.BytesPerToken)
	}
	return v, nil
}

// enginePaths maps an engine.FieldError field to its path below a role
// (fields not listed keep their name: sglang.chunked_prefill_size).
var enginePaths = map[string]string{
	"block_size":                  "kv_cache.block_size",
	"max_batched_tokens":          "scheduler.max_batched_tokens",
	"max_sequences":               "scheduler.max_sequences",
	"max_model_len":               "scheduler.max_model_len",
	"policy":                      "scheduler.policy",
	"decode_speedup":              "timing.decode_speedup",
	"capacity.blocks":             "kv_cache.capacity.blocks",
	"batch_wait_timeout_iters":    "scheduler.batch_wait_timeout_iters",
	"batch_wait_max_tokens_ratio": "scheduler.batch_wait_max_tokens_ratio",
}

// engineErr reports an engine check below path.
func engineErr(path string, err error) error {
	var fe *engine.FieldError
	if !errors.As(err, &fe) {
		return fmt.Errorf("%s: %w", path, err)
	}
	f := fe.Field
	if p, ok := enginePaths[f]; ok {
		f = p
	}
	return fmt.Errorf("%s.%s: %s", path, f, fe.Msg)
}

// policyOf is the engine policy of a backend name.
func policyOf(backend string) engine.Policy {
	switch backend {
	case "trtllm":
		return engine.TRTLLM
	case "sglang":
		return engine.SGLang
	}
	return engine.VLLM
}

// EngineConfig is the engine configuration of role: its settings, without
// the pool size, the timing model and the seed, which the simulator derives.
func (c *Config) EngineConfig(role *Role) engine.Config {
	ec := engine.Config{
		Policy:           policyOf(c.Engine.Backend),
		BlockSize:        role.BlockSize(c.Engine.Backend),
		NumBlocks:        role.KVCache.Capacity.Blocks,
		MaxBatchedTokens: role.Scheduler.MaxBatchedTokens,
		MaxSeqs:          role.Scheduler.MaxSequences,
		ChunkedPrefill:   role.Scheduler.ChunkedPrefill,
		PrefixCaching:    role.KVCache.PrefixCaching,
		MaxModelLen:      role.Scheduler.MaxModelLen,
		BatchWait:        engine.BatchWait{TimeoutIters: role.Scheduler.BatchWaitTimeoutIters, MaxTokensRatio: role.Scheduler.BatchWaitMaxTokensRatio},
		Scale:            timing.Scale{Speedup: role.Timing.Speedup, DecodeSpeedup: role.Timing.DecodeSpeedup},
	}
	// vLLM's --scheduling-policy (issue 30 item 8).
	ec.PriorityScheduling = role.Scheduler.Policy == "priority"
	if ec.Policy == engine.SGLang {
		sg := role.SGLang
		ec.SGLang = engine.SGLangConfig{
			MaxPrefillTokens: sg.MaxPrefillTokens, ChunkedPrefillSize: sg.ChunkedPrefillSize,
			ClipMaxNewTokens: sg.ClipMaxNewTokens, Conservativeness: sg.ScheduleConservativeness,
		}
		if sg.SchedulePolicy == "lpm" {
			ec.SGLang.Schedule = engine.LPM
		}
		ec.SGLang.Loop = c.sglangLoop(role) // engines.go
	}
	if role.Scheduler.Preemption == "fifo" {
		ec.Preemption = engine.FIFO
	}
	if role.KVCache.G1Backend == "kvbm" {
		ec.G1 = engine.KVBMG1 // the SGLang core keeps its radix cache
	}
	if sp := c.Engine.Speculation; sp.Enabled() {
		ec.Spec = engine.Speculation{NextN: sp.NumSpeculativeTokens, AcceptRates: sp.AcceptanceRates, Seed: sp.Seed}
	}
	return ec
}

// validateRole checks what is about the YAML (the enums, 0 meaning a
// default, the capacity and timing types) and leaves the engine settings to
// engine.Config.ValidateSettings.
func (c *Config) validateRole(path string, r *Role) error {
	p, k, tm := r.Parallelism, r.KVCache, r.Timing
	switch {
	case p.Replicas < 1:
		return fmt.Errorf("%s.parallelism.replicas: must be ≥ 1, got %d", path, p.Replicas)
	case p.Replicas > MaxReplicas:
		return fmt.Errorf("%s.parallelism.replicas: must be ≤ %d, got %d", path, MaxReplicas, p.Replicas)
	case p.Tensor < 1 || p.Pipeline < 1 || p.AttentionData < 1 || p.MoETensor < 1 || p.MoEExpert < 1:
		return fmt.Errorf("%s.parallelism: tensor, pipeline, attention_data, moe_tensor and moe_expert must be ≥ 1", path)
	case p.Tensor > MaxParallel || p.Pipeline > MaxParallel || p.AttentionData > MaxParallel || p.MoETensor > MaxParallel || p.MoEExpert > MaxParallel:
		return fmt.Errorf("%s.parallelism: tensor, pipeline, attention_data, moe_tensor and moe_expert must be ≤ %d", path, MaxParallel)
	case p.Replicas*r.GPUs() > MaxGPUs:
		return fmt.Errorf("%s.parallelism.replicas: replicas × tensor × pipeline × attention_data must be ≤ %d GPUs, got %d", path, MaxGPUs, p.Replicas*r.GPUs())
	case k.BlockSize < 0:
		return fmt.Errorf("%s.kv_cache.block_size: must be ≥ 0 (0 = backend default), got %d", path, k.BlockSize)
	case k.Capacity.Bytes < 0:
		return fmt.Errorf("%s.kv_cache.capacity.bytes: must be ≥ 1, got %d", path, k.Capacity.Bytes)
	case k.Capacity.Blocks != 0 && k.Capacity.Bytes != 0:
		return fmt.Errorf("%s.kv_cache.capacity: give blocks or bytes, not both (got blocks %d, bytes %d)", path, k.Capacity.Blocks, k.Capacity.Bytes)
	case k.Capacity.Type == "fixed" && k.Capacity.Blocks < 1 && k.Capacity.Bytes <= 0:
		return fmt.Errorf("%s.kv_cache.capacity.blocks: must be ≥ 1, got %d", path, k.Capacity.Blocks)
	case k.Capacity.Type == "default" && (k.Capacity.Blocks != 0 || k.Capacity.Bytes != 0):
		return fmt.Errorf("%s.kv_cache.capacity: blocks and bytes need type fixed (type default sizes the pool from GPU memory)", path)
	case !(k.Capacity.MemoryFraction > 0 && k.Capacity.MemoryFraction <= 1):
		return fmt.Errorf("%s.kv_cache.capacity.memory_fraction: must be in (0, 1], got %v", path, k.Capacity.MemoryFraction)
	case tm.Speedup < 0:
		return fmt.Errorf("%s.timing.speedup: must be ≥ 0 (0 = unscaled), got %v", path, tm.Speedup)
	case tm.DecodeSpeedup < 0:
		return fmt.Errorf("%s.timing.decode_speedup: must be ≥ 0, got %v", path, tm.DecodeSpeedup)
	case tm.Type == "fixed" && (tm.PrefillMs < 0 || tm.DecodeMs < 0):
		return fmt.Errorf("%s.timing: prefill_ms and decode_ms must be ≥ 0", path)
	case tm.Type == "fixed" && (tm.PrefillMs > timing.HorizonMs || tm.DecodeMs > timing.HorizonMs):
		return fmt.Errorf("%s.timing: prefill_ms and decode_ms must be ≤ %.0f (100 years)", path, timing.HorizonMs)
	case r.StartupSeconds < 0:
		return fmt.Errorf("%s.startup_seconds: must be ≥ 0", path)
	case tm.Kernels != "" && tm.Type != "default":
		// Only the roofline has kernels to price: under another timing the
		// key would be accepted and do nothing.
		return fmt.Errorf("%s.timing.kernels: %s prices timing type default, not %s", path, tm.Kernels, tm.Type)
	}
	if c.Engine.Backend == "sglang" {
		if err := r.SGLang.validate(path); err != nil {
			return err
		}
		// Issue 30 item 7: the SGLang core chunks by its own
		// chunked_prefill_size (SGLang's --chunked-prefill-size; -1 there
		// turns chunking off, which is not modelled), so the vLLM-style
		// switch would be silently ignored.
		if !r.Scheduler.ChunkedPrefill {
			return fmt.Errorf("%s.scheduler.chunked_prefill: false is not modelled by the sglang backend: it chunks prompts by %s.sglang.chunked_prefill_size (set it above the longest prompt to prefill each in one pass)", path, path)
		}
	}
	if err := c.validateMixedChunk(path, r); err != nil { // engines.go
		return err
	}
	if err := c.validateTiers(path, r); err != nil {
		return err
	}
	ec := c.EngineConfig(r)
	if err := ec.ValidateSettings(); err != nil {
		return engineErr(path, err)
	}
	for _, err := range []error{
		oneOf(path+".scheduler.preemption", r.Scheduler.Preemption, "lifo", "fifo"),
		oneOf(path+".scheduler.policy", r.Scheduler.Policy, "fcfs", "priority"),
		oneOf(path+".kv_cache.g1_backend", k.G1Backend, "native", "kvbm"),
		oneOf(path+".kv_cache.dtype", k.DType, "auto", "bf16", "fp16", "fp8"),
		oneOf(path+".kv_cache.capacity.type", k.Capacity.Type, "fixed", "default"),
		oneOf(path+".timing.type", tm.Type, "polynomial", "fixed", "profile", "default"),
		oneOf(path+".timing.kernels", cmp.Or(tm.Kernels, "curves"), "curves", "aic"),
	} {
		if err != nil {
			return err
		}
	}
	return c.validateDTypes(path, r)
}

// resolve fills the types left out: a capacity with blocks or bytes is
// fixed, else sized from GPU memory (default); timing with prefill_ms or
// decode_ms is fixed, with a path a profile, else the roofline (default).
// So an omitted section means the prediction of engine.model on
// engine.hardware, and a section that gives numbers uses them.
func (r *Role) resolve() {
	c, t := &r.KVCache.Capacity, &r.Timing
	if c.Type == "" {
		c.Type = "default"
		if c.Blocks > 0 || c.Bytes > 0 {
			c.Type = "fixed"
		}
	}
	if t.Type == "" {
		switch {
		case t.PrefillMs > 0 || t.DecodeMs > 0:
			t.Type = "fixed"
		case t.Path != "":
			t.Type = "profile"
		default:
			t.Type = "default"
		}
	}
}

// BlockSize is the engine block size: the configured one, or the backend's
// default (engine.DefaultBlockSize).
func (r *Role) BlockSize(backend string) int {
	if r.KVCache.BlockSize > 0 {
		return r.KVCache.BlockSize
	}
	return engine.DefaultBlockSize(policyOf(backend))
}

// GPUs is the number of GPUs one worker of the role uses.
func (r *Role) GPUs() int {
	return r.Parallelism.Tensor * r.Parallelism.Pipeline * r.Parallelism.AttentionData
}

// validateTiers checks the lower tiers against the engine they attach to;
// what only the model knows (its KV bytes per token) is checked when the
// run is built. Every error names kv_cache.tiers or a key below it.
func (c *Config) validateTiers(path string, r *Role) error {
	t := r.KVCache.Tiers
	p := path + ".kv_cache.tiers"
	if err := oneOf(p+".offload", t.Offload, "auto", "on_store", "on_evict"); err != nil {
		return err
	}
	set := t.Settings(r.BlockSize(c.Engine.Backend), 1) // any known bytes per token: the size is the model's
	if _, err := tiers.Resolve(set); err != nil {
		return fmt.Errorf("%s.%w", p, err)
	}
	if !set.Enabled() {
		return nil
	}
	switch {
	case c.Engine.Backend == "sglang":
		return fmt.Errorf("%s: not supported by the sglang backend (KVBM's lower tiers attach to the vLLM/TensorRT-LLM core only)", p)
	case r.KVCache.G1Backend != "kvbm":
		return fmt.Errorf("%s: need %s.kv_cache.g1_backend: kvbm (the native G1 models only the engine's own GPU tier)", p, path)
	case !r.KVCache.PrefixCaching:
		return fmt.Errorf("%s: need %s.kv_cache.prefix_caching: true (lower tiers keep blocks by their prefix hash)", p, path)
	case r.Scheduler.Policy == "priority":
		// Unparked requests re-enter the front of the waiting queue
		// holding their onboarded blocks (engine/tiers.go); a queue ordered
		// by priority would leave them behind the head.
		return fmt.Errorf("%s.scheduler.policy: priority is not modelled with KVBM lower tiers (%s); use fcfs or turn the tiers off", path, p)
	}
	return nil
}
