package sim

import (
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
	var roof *timing.Roofline
	hardware, hwPath := cfg.Engine.Hardware, "engine"
	if role.Hardware != "" {
		hardware, hwPath = role.Hardware, p // a role's own GPU
	}
	roofline := func() (*timing.Roofline, error) {
		if roof != nil {
			return roof, nil
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
		if err != nil {
			return nil, fmt.Errorf("%s: %w", hwPath, err)
		}
		roof = r
		return r, nil
	}

	if _, err := roofline(); err != nil {
		return nil, err
	}
	kind := role.Timing.Type
	if in.Profile != nil {
		kind = "profile" // --profile / an uploaded .npz selects profile timing
	}
	switch kind {
	case "polynomial":
		ec.Model = timing.Polynomial{}
	case "fixed":
		ec.Model = timing.Fixed{Prefill: role.Timing.PrefillMs, Decode: role.Timing.DecodeMs}
	case "profile":
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
		if name == "" {
			name = "profile.npz"
		}
		m, err := timing.LoadProfile(data, name)
		if err != nil {
			return nil, err
		}
		ec.Model = m
	case "default":
		r, err := roofline()
		if err != nil {
			return nil, err
		}
		ec.Model = r
	}

	c := role.KVCache.Capacity
	switch {
	case c.Type == "default":
		r, err := roofline()
		if err != nil {
			return nil, err
		}
		n, err := r.EstimateBlocks(c.MemoryFraction, ec.BlockSize, 0)
		if err != nil {
			return nil, fmt.Errorf("%s.kv_cache.capacity: %w", p, err)
		}
		ec.NumBlocks = n
	case c.Bytes > 0:
		r, err := roofline()
		if err != nil {
			return nil, err
		}
		per := r.KVBytesPerToken() * int64(ec.BlockSize)
		if per <= 0 {
			return nil, fmt.Errorf("%s.kv_cache.capacity.bytes: the model has no KV bytes per token", p)
		}
		ec.NumBlocks = int(c.Bytes / per)
		if ec.NumBlocks < 1 {
			return nil, fmt.Errorf("%s.kv_cache.capacity.bytes: %d bytes hold no %d-token block of %d bytes", p, c.Bytes, ec.BlockSize, per)
		}
	default:
		ec.NumBlocks = c.Blocks
	}
	if c.Type != "fixed" || c.Bytes > 0 {
		// A derived pool (tiny bytes per token: kv_lora_rank 1) may come
		// to billions of blocks; pools allocate up front, so one past
		// engine.MaxBlocks is cut to what the run can touch.
		if ec.NumBlocks > engine.MaxBlocks && wl != nil {
			ec.NumBlocks = min(ec.NumBlocks, touchable(wl, ec))
		}
		if ec.NumBlocks > engine.MaxBlocks {
			return nil, fmt.Errorf("%s.kv_cache.capacity: the pool comes to %d blocks of %d tokens, more than engine.MaxBlocks (%d); give capacity {type: fixed, blocks: N} or a larger block_size", p, ec.NumBlocks, ec.BlockSize, engine.MaxBlocks)
		}
	}
	return roof, nil
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
func deployment(cfg *config.Config, r role, roof *timing.Roofline, ec *engine.Config) (report.PoolDeployment, string, error) {
	fit := roof.Memory(ec.NumBlocks, ec.BlockSize)
	d := report.PoolDeployment{
		Name: r.name, Hardware: roof.GPU.Name, Replicas: r.Parallelism.Replicas, Tensor: roof.Par.Tensor,
		AttentionData: r.Parallelism.AttentionData, GPUsPerWorker: r.GPUs(),
		Timing: r.Timing.Type, Validation: timing.Validation(r.Timing.Type, roof.GPU.Name), Capacity: r.KVCache.Capacity.Type,
		KVBlocks: ec.NumBlocks, BlockSize: ec.BlockSize,
		GPUBytes: fit.GPUBytes, WeightsBytes: fit.WeightsBytes, KVBytes: fit.KVBytes, ReserveBytes: fit.ReserveBytes,
		FreeBytes: fit.FreeBytes, Fits: fit.Fits(),
	}
	if d.Fits {
		return d, "", nil
	}
	msg := fmt.Sprintf("%s.kv_cache.capacity: %d blocks of %d tokens take %.1f GiB per GPU; with %.1f GiB of weights and a %.0f GiB reserve that is more than the %s's %.1f GiB",
		r.path, ec.NumBlocks, ec.BlockSize, fit.KVBytes/(1<<30), fit.WeightsBytes/(1<<30), fit.ReserveBytes/(1<<30), d.Hardware, fit.GPUBytes/(1<<30))
	if r.Timing.Type == "default" {
		return d, "", timing.NotFit("%s; give fewer blocks or capacity type default (sized from memory), or a timing type that ignores the hardware", msg)
	}
	return d, msg + " (the timing ignores the hardware, so the run goes on)", nil
}
