package sim

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/workload"
	"github.com/dynosim/dynosim-web/timing"
)

// timingAndCapacity resolves the role's timing source and G1 capacity.
// The roofline model (engine.model × engine.hardware) serves both
// `timing.type: default` and `capacity.type: default`. It is built for
// every run, so an unknown model or GPU is an error whatever the timing
// type: a config never names hardware that nothing checks.
func timingAndCapacity(cfg *config.Config, p string, role *config.Role, in Inputs, wl *workload.Workload, ec *engine.Config) (*timing.Roofline, error) {
	roof, err := buildRoofline(cfg, p, role, in)
	if err != nil {
		return nil, err
	}
	if err := setTiming(p, role, in, roof, ec); err != nil {
		return nil, err
	}
	ec.Spec.DraftRatio = draftRatio(cfg.Engine.Speculation.Kind, roof.Model)
	if err := sizePool(p, role, roof, wl, ec, sglangPool(cfg)); err != nil {
		return nil, err
	}
	return roof, nil
}

// draftRatio is the cost of one draft step of the speculation kind over a
// target decode step (issue 30 item 4; timing/spec.go). EAGLE's draft head
// is one decoder layer (vLLM's EAGLE/EAGLE-3 heads, e.g.
// yuhuili/EAGLE-LLaMA3.1-Instruct-8B: num_hidden_layers 1); DeepSeek's MTP
// module is one layer too (num_nextn_predict_layers: 1, reused for every
// draft by vLLM's deepseek_mtp.py). vLLM's n-gram proposer matches the
// prompt on the CPU: no GPU draft work, verification only.
func draftRatio(kind string, m timing.ModelSpec) float64 {
	switch kind {
	case "eagle", "mtp":
		return timing.DraftRatio(m, 1)
	}
	return 0
}

// buildRoofline is the roofline model of the role's layout on its GPU (the
// role's own hardware, else engine.hardware); its errors name that path.
func buildRoofline(cfg *config.Config, p string, role *config.Role, in Inputs) (*timing.Roofline, error) {
	hardware, hwPath := cfg.Engine.Hardware, "engine"
	if role.Hardware != "" {
		hardware, hwPath = role.Hardware, p // a role's own GPU
	}
	spec := timing.RooflineSpec{
		Model:    cfg.Engine.Model,
		Hardware: hardware,
		DType:    cfg.Engine.DType,
		Engine:   cfg.Engine.Backend,
		KVDType:  role.KVCache.DType,
		Parallelism: timing.Parallelism{
			Tensor: role.Parallelism.Tensor, AttentionData: role.Parallelism.AttentionData,
			MoETensor: role.Parallelism.MoETensor, MoEExpert: role.Parallelism.MoEExpert,
			Pipeline: role.Parallelism.Pipeline,
		},
	}
	switch {
	case in.ModelConfig != nil:
		spec.ModelConfig, spec.ModelConfigName = in.ModelConfig, in.ModelConfigName
	case strings.HasSuffix(cfg.Engine.Model, ".json"):
		if in.ReadFile == nil {
			return nil, fmt.Errorf("engine.model: %s: no file access here; upload the config.json instead", cfg.Engine.Model)
		}
		data, err := in.ReadFile(cfg.Engine.Model)
		if err != nil {
			return nil, fmt.Errorf("engine.model: %w", err)
		}
		spec.ModelConfig, spec.ModelConfigName = data, cfg.Engine.Model
	}
	r, err := timing.NewRoofline(spec)
	if errors.Is(err, timing.ErrPipeline) {
		return nil, fmt.Errorf("%s.%w", p, err) // the role's key, whatever its hardware
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", hwPath, err)
	}
	// timing.kernels: aic insists on the table; omitted, the default timing
	// takes it where one exists (issue 33 item 3).
	kind, _ := timingOf(role, in)
	if k := role.Timing.Kernels; k == "aic" || k == "" && kind == "default" {
		if err := useKernelTable(r, p, hardware, cmp.Or(cfg.Engine.Backend, "vllm"), in, k == "aic"); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// useKernelTable binds the measured kernel table of the role's GPU and
// engine to its roofline. Without one the pool stays on the fitted
// curves (deployment labels why), unless required (`timing.kernels:
// aic`), which is refused rather than silently priced on the curves. A
// table that could not be read fails the run: the page's loader asks for
// a table it has not fetched yet through that error.
func useKernelTable(r *timing.Roofline, p, hardware, backend string, in Inputs, required bool) error {
	if in.KernelTable == nil {
		if !required {
			return nil
		}
		return fmt.Errorf("%s.timing.kernels: aic: no kernel tables were given to this run (the CLI embeds them, the page and the Worker fetch them; a caller of core/sim passes Inputs.KernelTable)", p)
	}
	t, err := in.KernelTable(timing.KernelTableGPU(hardware), backend)
	if err != nil {
		return fmt.Errorf("%s.timing.kernels: %w", p, err)
	}
	if t == nil {
		if !required {
			return nil
		}
		return fmt.Errorf("%s.timing.kernels: aic: AIConfigurator measured no kernels of %s under %s; use kernels: curves", p, hardware, backend)
	}
	if err := r.UseKernelTable(t); err != nil {
		return fmt.Errorf("%s.timing.kernels: %w", p, err)
	}
	return nil
}

// curvesWhy says why a default-timing pool is priced on the fitted curves.
func curvesWhy(cfg *config.Config, r role, in Inputs) string {
	switch {
	case r.Timing.Kernels == "curves":
		return "" // asked for
	case in.KernelTable == nil:
		return " (no kernel tables were given to this run)"
	}
	hw := cmp.Or(r.Hardware, cfg.Engine.Hardware)
	return fmt.Sprintf(" (AIConfigurator measured no kernels of %s under %s)", hw, cmp.Or(cfg.Engine.Backend, "vllm"))
}

// timingOf is the timing that prices role's passes and, for a profile,
// the file it is read from: a profile given to the run (--profile, an
// uploaded .npz) overrides the role's timing type. The report labels the
// pool with it (issue 30 item 5: a --profile run was labelled "default",
// with the roofline's validation claim).
func timingOf(role *config.Role, in Inputs) (kind, profile string) {
	switch {
	case in.Profile != nil:
		return "profile", cmp.Or(in.ProfileName, "profile.npz")
	case role.Timing.Type == "profile":
		return "profile", role.Timing.Path
	}
	return role.Timing.Type, ""
}

// setTiming sets ec.Model from the role's timing (timingOf). A pipeline-
// parallel role (issue 30 item 2) needs a timing whose pass is the
// traversal of every stage: the roofline prices it (timing/pipeline.go)
// and fixed timing's given pass times are taken as that; a profile is
// one table with no layout to scale, and the polynomial the reference's
// single-engine curve, so both are refused rather than run as if every
// stage were a free extra engine.
func setTiming(p string, role *config.Role, in Inputs, roof *timing.Roofline, ec *engine.Config) error {
	kind, _ := timingOf(role, in)
	if pp := role.Parallelism.Pipeline; pp > 1 && (kind == "profile" || kind == "polynomial") {
		what := "timing.type " + kind
		if in.Profile != nil {
			what = "a --profile / uploaded profile (timing type profile)"
		}
		return fmt.Errorf("%s.parallelism.pipeline: %d needs timing.type default (the roofline prices each pipeline stage and the activation transfers between them) or fixed; %s cannot express pipeline stages", p, pp, what)
	}
	switch kind {
	case "polynomial":
		ec.Model = timing.Polynomial{}
	case "fixed":
		ec.Model = timing.Fixed{Prefill: role.Timing.PrefillMs, Decode: role.Timing.DecodeMs}
	case "profile":
		m, err := loadProfile(p, role, in)
		if err != nil {
			return err
		}
		ec.Model = m
	case "default":
		ec.Model = roof
	}
	return nil
}

// loadProfile reads the profile timing: the run's uploaded profile, else
// the role's timing.path.
func loadProfile(p string, role *config.Role, in Inputs) (*timing.Interpolated, error) {
	data, name := in.Profile, in.ProfileName
	if data == nil {
		if role.Timing.Path == "" {
			return nil, fmt.Errorf("%s.timing.path: profile timing needs a .npz path (or an uploaded profile)", p)
		}
		if in.ReadFile == nil {
			return nil, fmt.Errorf("%s.timing.path: %s: no file access here; upload the profile instead", p, role.Timing.Path)
		}
		var err error
		if data, err = in.ReadFile(role.Timing.Path); err != nil {
			return nil, fmt.Errorf("%s.timing.path: %w", p, err)
		}
		name = role.Timing.Path
	}
	return timing.LoadProfile(data, cmp.Or(name, "profile.npz"))
}

// sizePool sets ec.NumBlocks, the G1 pool: sized from GPU memory, from a
// byte budget or given in blocks.
//
// Under SGLang's accounting (sglang: backend sglang, engine.semantics
// real) the fraction is mem_fraction_static, SGLang's own default when the
// config gives none (timing.SGLangMemFractionStatic: the chunk the
// deployment renders, the GPU's memory and TP × PP), and the reserve
// beside it only SGLang's non-torch memory: its activations and CUDA
// graphs live inside 1 − mem_fraction_static.
func sizePool(p string, role *config.Role, roof *timing.Roofline, wl *workload.Workload, ec *engine.Config, sglang bool) error {
	c := role.KVCache.Capacity
	switch {
	case c.Type == "default" && sglang:
		n, err := roof.EstimateBlocksReserve(sglangFraction(role, roof, ec), ec.BlockSize, timing.SGLangNonTorchBytes)
		if err != nil {
			return fmt.Errorf("%s.kv_cache.capacity: %w", p, err)
		}
		ec.NumBlocks = n
	case c.Type == "default":
		n, err := roof.EstimateBlocks(c.MemoryFraction, ec.BlockSize, 0)
		if err != nil {
			return fmt.Errorf("%s.kv_cache.capacity: %w", p, err)
		}
		ec.NumBlocks = n
	case c.Bytes > 0:
		per := roof.KVBytesPerToken() * int64(ec.BlockSize)
		if per <= 0 {
			return fmt.Errorf("%s.kv_cache.capacity.bytes: the model has no KV bytes per token", p)
		}
		ec.NumBlocks = int(c.Bytes / per)
		if ec.NumBlocks < 1 {
			return fmt.Errorf("%s.kv_cache.capacity.bytes: %d bytes hold no %d-token block of %d bytes", p, c.Bytes, ec.BlockSize, per)
		}
	default:
		ec.NumBlocks = c.Blocks
	}
	if c.Type != "fixed" || c.Bytes > 0 {
		// A derived pool (tiny bytes per token: kv_lora_rank 1, or a huge
		// capacity.bytes) may come to billions of blocks, past
		// engine.MaxBlocks (where slot ids and a pool's token count stay
		// in range): it is cut to what the run can touch, which runs the
		// same since the run never holds more.
		if ec.NumBlocks > engine.MaxBlocks && wl != nil {
			ec.NumBlocks = min(ec.NumBlocks, touchable(wl, ec))
		}
		if ec.NumBlocks > engine.MaxBlocks {
			key, from := p+".kv_cache.capacity", "the GPU's memory"
			if c.Bytes > 0 {
				key, from = p+".kv_cache.capacity.bytes", fmt.Sprintf("%d bytes", c.Bytes)
			}
			return fmt.Errorf("%s: %s make a pool of %d blocks of %d tokens, more than engine.MaxBlocks (%d); give capacity {type: fixed, blocks: N} or a larger block_size", key, from, ec.NumBlocks, ec.BlockSize, engine.MaxBlocks)
		}
	}
	return nil
}

// touchable is the most blocks a run of wl can hold at once: every request
// resident with its prompt, output and a speculative burst, plus one.
func touchable(wl *workload.Workload, ec *engine.Config) int {
	n, bs := 1, ec.BlockSize
	for i := range wl.Sessions {
		for _, t := range wl.Sessions[i].Turns {
			n += (t.Input+t.Output+ec.Spec.NextN+1+bs-1)/bs + 1
			if n > engine.MaxBlocks {
				return n
			}
		}
	}
	return n
}

// deployment describes role r's pool for the report: its GPU, layout,
// timing and how the GPU's memory divides. A fixed KV pool that cannot fit
// beside the weights is an error under the roofline timing, whose
// predictions assume that GPU, and a warning under the timings that ignore
// the hardware.
func deployment(cfg *config.Config, r role, in Inputs, roof *timing.Roofline, ec *engine.Config) (report.PoolDeployment, string, error) {
	// A pool given in bytes is judged as given: sizePool may have cut
	// its blocks to what the run can touch.
	blocks, c := ec.NumBlocks, r.KVCache.Capacity
	if per := roof.KVBytesPerToken() * int64(ec.BlockSize); c.Bytes > 0 && per > 0 {
		blocks = int(c.Bytes / per)
	}
	fit := roof.Memory(blocks, ec.BlockSize)
	if sglangPool(cfg) {
		fit = roof.MemoryReserve(blocks, ec.BlockSize, timing.SGLangNonTorchBytes)
	}
	kind, profile := timingOf(r.Role, in)
	d := report.PoolDeployment{
		Name: r.name, Hardware: roof.GPU.Name, Replicas: r.Parallelism.Replicas, Tensor: roof.Par.Tensor,
		AttentionData: r.Parallelism.AttentionData, GPUsPerWorker: r.GPUs(),
		Timing: kind, TimingProfile: profile, Validation: timing.Validation(kind, roof.GPU.Name, cfg.Engine.Backend, cfg.Traffic.Load.Type), Capacity: r.KVCache.Capacity.Type,
		KVBlocks: ec.NumBlocks, BlockSize: ec.BlockSize,
		GPUBytes: fit.GPUBytes, WeightsBytes: fit.WeightsBytes, KVBytes: fit.KVBytes, ReserveBytes: fit.ReserveBytes,
		FreeBytes: fit.FreeBytes, Fits: fit.Fits(),
	}
	if kind == "default" {
		d.TimingKernels = roof.KernelSource()
		if d.TimingKernels == "curves" {
			d.TimingKernels += curvesWhy(cfg, r, in)
			// The validation figures, where there are any, are the
			// default timing's: the tables wherever a source's GPU and
			// engine were measured.
			if timing.Validated(roof.GPU.Name, cfg.Engine.Backend, cfg.Traffic.Load.Type) {
				d.Validation += " (measured with AIConfigurator's kernel tables; this run is priced on the fitted curves)"
			}
		}
	}
	if d.Fits {
		return d, "", nil
	}
	pool, fewer := fmt.Sprintf("%s.kv_cache.capacity: %d blocks of %d tokens take", r.path, ec.NumBlocks, ec.BlockSize), "blocks"
	if c.Bytes > 0 {
		pool, fewer = fmt.Sprintf("%s.kv_cache.capacity.bytes: %d bytes of KV are", r.path, c.Bytes), "bytes"
	}
	msg := fmt.Sprintf("%s %.1f GiB per GPU; with %.1f GiB of weights and a %.0f GiB reserve that is more than the %s's %.1f GiB",
		pool, fit.KVBytes/(1<<30), fit.WeightsBytes/(1<<30), fit.ReserveBytes/(1<<30), d.Hardware, fit.GPUBytes/(1<<30))
	if r.Timing.Type == "default" {
		return d, "", timing.NotFit("%s; give fewer %s or capacity type default (sized from memory), or a timing type that ignores the hardware", msg, fewer)
	}
	return d, msg + " (the timing ignores the hardware, so the run goes on)", nil
}

// sglangPool: the run sizes its pools as SGLang does (sizePool).
func sglangPool(cfg *config.Config) bool {
	return cfg.Engine.Backend == "sglang" && cfg.Engine.Semantics == "real"
}

// sglangFraction is the role's mem_fraction_static: as written, else
// SGLang's default for the deployment (the chunked prefill size it is
// launched with, max_prefill_tokens when chunking is off; a draft model).
func sglangFraction(role *config.Role, roof *timing.Roofline, ec *engine.Config) float64 {
	c := role.KVCache.Capacity
	if !c.FractionUnset {
		return c.MemoryFraction
	}
	tokens := role.SGLang.MaxPrefillTokens
	if role.Scheduler.ChunkedPrefill {
		tokens = role.SGLang.ChunkedPrefillSize
	}
	return timing.SGLangMemFractionStatic(roof.GPU.MemoryBytes, roof.Par.Tensor, roof.Par.Pipeline, tokens, ec.Spec.NextN > 0)
}
