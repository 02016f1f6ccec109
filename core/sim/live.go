package sim

import (
	"fmt"
	"math"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/replay"
	"github.com/dynosim/dynosim-web/core/report"
)

// Live is a deployment built for live mode: the loop predict would replay,
// in live mode, and what front ends say of it.
type Live struct {
	*replay.Loop
	Config     config.Config
	Engine     engine.Config // what the first pool's workers are built from
	Ranks      int           // DP ranks per worker of the first pool
	Deployment report.Deployment

	pools  []engine.Config // every pool's, in the loop's order
	paths  []string        // their config paths (engine.workers.decode)
	direct bool            // disaggregated decode by the direct path (else bootstrap)
}

// NewLive builds the deployment of in's config for live mode: the same
// pools, engines, routers and frontend latency a prediction of that config
// replays, aggregated or disaggregated, with its planner. Its traffic
// section is ignored (clients are the traffic), and every worker publishes
// KV events.
func NewLive(in Inputs, obs replay.Observer) (*Live, error) {
	p := &Prepared{in: in, name: in.ConfigName, live: true}
	if p.name == "" {
		p.name = "config"
	}
	cfg, err := p.parse(nil)
	if err != nil {
		return nil, err
	}
	c, err := p.cluster(&cfg, nil)
	if err != nil {
		return nil, err
	}
	r := roles(&cfg)[0]
	l, err := replay.New(nil, c.pools, replay.Options{
		Live:            true,
		Observer:        obs,
		Frontend:        c.frontend,
		Tiers:           len(c.tiers) > 0,
		Transfer:        c.xfer,
		Scaling:         c.scaling,
		AsyncScheduling: cfg.Engine.Mode != "disaggregated" && r.Scheduler.AsyncScheduling,
	})
	if err != nil {
		return nil, err
	}
	lv := &Live{Loop: l, Config: cfg, Engine: c.ecfgs[0], Ranks: c.layouts[0].ranks, Deployment: c.dep,
		pools: c.ecfgs, direct: c.xfer != nil && c.xfer.Direct}
	for _, r := range roles(&cfg) {
		lv.paths = append(lv.paths, r.path)
	}
	return lv, nil
}

// CheckPriority refuses a request priority the deployment's engines do not
// schedule by: as vLLM's processor does ("Got priority … but Priority
// scheduling is not enabled", vllm/v1/engine/processor.py), a priority
// other than 0 needs scheduler.policy: priority on every pool it passes.
func (l *Live) CheckPriority(p int64) error {
	if p < math.MinInt32 || p > math.MaxInt32 {
		return fmt.Errorf("priority: must be an integer in [%d, %d], got %d", math.MinInt32, math.MaxInt32, p)
	}
	for i := range l.pools {
		if p != 0 && !l.pools[i].PriorityScheduling {
			return fmt.Errorf("priority: got %d but %s.scheduler.policy is fcfs: priority scheduling is not enabled", p, l.paths[i])
		}
	}
	return nil
}

// Fits refuses a request of prompt tokens asking for maxOutput tokens that
// a prediction of this deployment rejects as never fitting: the engine's
// own rule (engine.Config.Fits) on every pool the request passes through,
// so a front end can refuse it up front, as predict's report rejects it,
// rather than stream tokens until the engine gives up. The error names
// the reason (engine.Reason's name), the pool and its bound.
func (l *Live) Fits(prompt, maxOutput int) (engine.Reason, error) {
	for i := range l.pools {
		ec := &l.pools[i]
		why := ec.Fits(prompt, maxOutput)
		if ec.Decode && !l.direct {
			why = ec.FitsReserved(prompt, maxOutput)
		}
		switch why {
		case engine.MaxModelLen:
			return why, fmt.Errorf("the prompt's %d tokens reach %s.scheduler.max_model_len (%d): predict rejects the request as %s", prompt, l.paths[i], ec.MaxModelLen, why)
		case engine.MaxBatchedTokens:
			return why, fmt.Errorf("the prompt's %d tokens are more than %s.scheduler.max_batched_tokens (%d) with scheduler.chunked_prefill: false, so no pass could prefill it: predict rejects the request as %s", prompt, l.paths[i], ec.MaxBatchedTokens, why)
		case engine.KVCapacity:
			return why, fmt.Errorf("a prompt of %d tokens and %d output tokens can never fit the KV cache of a worker of %s (%d blocks of %d tokens per engine core: DP rank or pipeline virtual engine): predict rejects the request as %s", prompt, maxOutput, l.paths[i], ec.NumBlocks, ec.BlockSize, why)
		}
	}
	return engine.NotRejected, nil
}
