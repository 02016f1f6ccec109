package sim

import (
	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/timing"
)

// layout is how a worker's ranks step (engine.Worker lanes).
type layout struct{ ranks, lanes int }

// layoutOf is the layout of role r's workers: attention_data × pipeline
// engine cores, rank d×pipeline+v the DP rank d's virtual engine v.
//
// Under engine.semantics real the attention-data ranks of a dense model
// are independent engines, each its own lane: vLLM runs the DP ranks of a
// dense model as separate engine cores with their own schedulers and KV
// caches, and only MoE models synchronise the ranks every step
// (vllm/v1/engine/core.py DPEngineCoreProc, used when the model has
// experts; "Data Parallel Deployment" in the vLLM docs). MoE models and
// engine.semantics mocker step every DP rank in lock-step, ending at the
// slowest rank (mocker.md).
//
// A pipeline of P stages runs P virtual engines, each with its own
// scheduler, a 1/P share of the KV blocks and its own pass clock, so P
// batches are in flight, one per stage; a pass is the traversal of every
// stage (timing/pipeline.go). That is vLLM V0's design (LLMEngine keeps
// pipeline_parallel_size schedulers); V1 keeps P batches in flight from
// one scheduler over one pool (the batch queue of
// max_concurrent_batches), which this approximates with split pools.
// Under real and mocker alike: the reference has no pipeline.
func layoutOf(cfg *config.Config, r role, m timing.ModelSpec) layout {
	dp, pp := r.Parallelism.AttentionData, max(r.Parallelism.Pipeline, 1)
	if cfg.Engine.Semantics == "mocker" || m.IsMoE() {
		return layout{dp * pp, pp} // lane v: every DP rank's virtual engine v
	}
	return layout{dp * pp, dp * pp}
}

// newWorker builds worker id (its global index seeds its output tokens).
func newWorker(cfg *config.Config, ec engine.Config, lo layout, id int) (*engine.Worker, error) {
	ec.Seed = cfg.Execution.Seed*0x9E3779B97F4A7C15 + uint64(id)*1024
	return engine.NewLanedWorker(ec, lo.ranks, lo.lanes)
}
