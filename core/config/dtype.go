package config

import (
	"fmt"

	"github.com/dynosim/dynosim-web/timing"
)

// validateDTypes refuses a weight dtype (engine.dtype) or KV-cache dtype
// (path.kv_cache.dtype) that the role's GPU has no tensor units for: FP8
// before Ada Lovelace/Hopper, FP4 before Blackwell (timing/dtype.go names
// the whitepapers). Issue 30 item 3: fp4 on an H100 was accepted and
// priced as FP8. The error names the dtype key, the GPU and its key, and
// the dtypes that GPU supports.
//
// Hardware is always a catalog name (there is no custom hardware section
// in a config), so every GPU a config can name is checked here; an unknown
// name passes and is refused, naming its key, when the run is built
// (core/sim). A timing.GPUSpec built in code declares its formats by its
// FP8/FP4 rates and timing.NewRooflineFrom applies the same check.
func (c *Config) validateDTypes(path string, r *Role) error {
	hw, hwKey := c.Engine.Hardware, "engine.hardware"
	if r.Hardware != "" {
		hw, hwKey = r.Hardware, path+".hardware"
	}
	g, err := timing.LookupGPU(hw)
	if err != nil {
		return nil // refused by name when the run is built
	}
	g.Name = fmt.Sprintf("%s (%s)", g.Name, hwKey)
	if err := g.CheckDType(c.Engine.DType, false); err != nil {
		return fmt.Errorf("engine.dtype: %w", err)
	}
	if err := g.CheckDType(r.KVCache.DType, true); err != nil {
		return fmt.Errorf("%s.kv_cache.dtype: %w", path, err)
	}
	return nil
}
