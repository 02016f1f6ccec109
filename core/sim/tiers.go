package sim

import (
	"fmt"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/kv/tiers"
	"github.com/dynosim/dynosim-web/timing"
)

// poolTiers are the lower tiers one pool's workers share in a run.
type poolTiers struct {
	pool string
	sys  *tiers.System
}

// lowerTiers builds role r's KVBM lower tiers, or nil when it has none. A
// block's bytes are the whole KV of its tokens on the worker (every TP
// shard): engine.kv_transfer.bytes_per_token when given as a number, else
// the model's, in its KV dtype.
func lowerTiers(cfg *config.Config, r role, roof *timing.Roofline, blockSize int) (*tiers.System, error) {
	t := &r.KVCache.Tiers
	set := t.Settings(blockSize, 0)
	if !set.Enabled() {
		return nil, nil
	}
	bpt, err := cfg.Engine.KVTransfer.BytesPerTokenValue()
	if err != nil {
		return nil, err
	}
	if bpt == 0 {
		bpt = float64(timing.KVBytesPerToken(roof.Model, 1))
	}
	set.BytesPerToken = bpt
	set.WriteThrough = t.WriteThrough(cfg.Engine.Semantics)
	tc, err := tiers.Resolve(set)
	if err != nil {
		return nil, fmt.Errorf("%s.kv_cache.tiers: %w", r.path, err)
	}
	return tiers.New(tc), nil
}

// tierReports are the report's kv_tiers entries.
func tierReports(ts []poolTiers, rep *report.Report) []report.TierPool {
	var out []report.TierPool
	for _, t := range ts {
		out = append(out, report.Tiers(t.pool, t.sys.Config(), t.sys.Snapshot(), rep.Summary[schema.DurationMs]))
	}
	return out
}
