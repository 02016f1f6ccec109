package sim

import (
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
	return &Live{Loop: l, Config: cfg, Engine: c.ecfgs[0], Ranks: r.Parallelism.AttentionData, Deployment: c.dep}, nil
}
