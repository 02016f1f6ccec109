package sim

import (
	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/planner"
	"github.com/dynosim/dynosim-web/core/replay"
	"github.com/dynosim/dynosim-web/timing"
)

// scaling builds the planner of cfg over its pools (ecfgs: what each
// pool's workers are built from): its policies priced with each pool's
// own timing model, a startup time per pool, and cold workers on demand.
func scaling(cfg *config.Config, c *cluster) (*replay.Scaling, error) {
	pc, err := cfg.Planner.Resolve(cfg.Evaluation.SLA)
	if err != nil {
		return nil, err
	}
	s := &replay.Scaling{}
	var pools []planner.Pool
	for i, r := range roles(cfg) {
		ec, lo := c.ecfgs[i], c.layouts[i]
		pools = append(pools, planner.Pool{Name: r.name, GPUsPerWorker: r.GPUs(), MinWorkers: cfg.Planner.MinWorkersOf(r.name),
			Model: ec.Model, Scale: ec.Scale, MaxBatchedTokens: ec.MaxBatchedTokens, MaxSeqs: ec.MaxSeqs, KVTokens: ec.NumBlocks * ec.BlockSize * max(r.Parallelism.Pipeline, 1)})
		s.Startup = append(s.Startup, timing.FromMs(r.StartupSeconds*1000))
		s.New = append(s.New, func(id int) (*engine.Worker, error) { return newWorker(cfg, ec, lo, id) })
	}
	pl, err := planner.New(pc, pools)
	if err != nil {
		return nil, err
	}
	s.Tick, s.FirstMs = pl.Tick, pl.FirstMs()
	return s, nil
}
