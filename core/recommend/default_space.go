package recommend

import (
	"fmt"
	"strings"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/timing"
	"gopkg.in/yaml.v3"
)

// Issue 32 item 1: a recommend config with no domain (or only a list of
// GPUs, engine.hardware: {choices: […]}) searches a default space of
// deployments. It is not a product of independent dimensions — a knob
// that cannot matter for a candidate is folded to one trial — so it is one
// dimension, DefaultPath, whose values are the deployments in words
// (Space.Deployments holds each one's overrides). Any other domain turns it off
// (the config's own space is searched as before), and so does a config
// that gives any knob the default space sets (searchedKeys: engine.mode,
// a pool's parallelism or max_batched_tokens, router.policy or
// prefill_load_scale): it has chosen its deployment, one candidate.
//
// Per GPU, with B = optimization.constraints.max_candidate_gpus:
//   - tensor: the smallest of 1, 2, 4, 8 (≤ B) whose weights fit the GPU
//     (timing.EstimateBlocks, the check predict's kv_cache capacity default
//     runs) and the next larger one; a model outside the catalog (a
//     config.json path) is not sized here: tensor 1 and 2, and a size that
//     does not fit is an infeasible kv_capacity trial as any other;
//   - aggregated: replicas n = ⌊B/TP⌋ and n/2; disaggregated: prefill +
//     decode splits 1 + (n−1) and n/2 + n/2 (one prefill and one decode
//     when n = 2), both pools at the same TP;
//   - router: round_robin, kv_router at prefill_load_scale 1 (the default)
//     and kv_router at defaultAltLoadScale; folded to round_robin when no
//     pool has two replicas (one worker to pick), and prefill_load_scale
//     is never varied under round_robin (it ignores it);
//   - max_batched_tokens: the engine default and defaultAltBatchedTokens
//     in aggregated mode only, where prefill chunks share passes with
//     decodes and the chunk size trades TTFT against ITL; folded in
//     disaggregated mode (a decode pass holds one token per sequence, far
//     below either bound, and the prefill pool is left at the default).
//
// With B = 8 and a model fitting one GPU this is 24 aggregated and 12
// disaggregated candidates: 36 trials, all run (exhaustive).

// DefaultPath names the default space's one dimension in the ledger.
const DefaultPath = "deployment"

const (
	defaultAltLoadScale     = 4    // kv_router weighing prefill load 4× the default
	defaultAltBatchedTokens = 2048 // a quarter of vLLM's 8,192: shorter chunks, lower ITL
)

// defaultSpace replaces sp's dimensions with the default space when the
// config has none, or only engine.hardware. It leaves sp alone when the
// base config does not parse (the search reports that error as before).
func (sp *Space) defaultSpace() {
	var gpus []string
	switch {
	case len(sp.Dims) == 0:
	case len(sp.Dims) == 1 && sp.Dims[0].Path == "engine.hardware":
		for _, v := range sp.Dims[0].Values {
			gpus = append(gpus, strings.Trim(v, `"'`))
		}
	default:
		return
	}
	if pinsDeployment(sp.Base) {
		return
	}
	cfg, err := config.Parse(sp.Name, sp.Base, nil)
	if err != nil {
		return
	}
	if len(gpus) == 0 {
		gpus = []string{cfg.Engine.Hardware}
	}
	budget := sp.Spec.Optimization.Limits.MaxCandidateGPUs
	d := Dim{Path: DefaultPath}
	var sets [][]string
	for _, gpu := range gpus {
		for _, p := range defaultPoints(&cfg, gpu, budget, len(gpus) > 1) {
			d.Values = append(d.Values, p.label)
			sets = append(sets, p.sets)
		}
	}
	if len(d.Values) > 0 {
		sp.Dims, sp.Deployments = []Dim{d}, sets
	}
}

// searchedKeys are the knobs the default space sets: a config that gives
// any of them has chosen its deployment, and is one candidate as before.
var searchedKeys = []string{"engine.mode", "router.policy", "router.prefill_load_scale",
	"engine.workers.aggregated.parallelism", "engine.workers.prefill.parallelism", "engine.workers.decode.parallelism",
	"engine.workers.aggregated.scheduler.max_batched_tokens", "engine.workers.prefill.scheduler.max_batched_tokens",
	"engine.workers.decode.scheduler.max_batched_tokens"}

// pinsDeployment reports whether the base config gives a searched knob.
func pinsDeployment(base []byte) bool {
	var doc yaml.Node
	if yaml.Unmarshal(base, &doc) != nil || len(doc.Content) != 1 {
		return false
	}
	for _, key := range searchedKeys {
		n := doc.Content[0]
		for _, k := range strings.Split(key, ".") {
			var next *yaml.Node
			for i := 0; n != nil && n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					next = n.Content[i+1]
				}
			}
			n = next
		}
		if n != nil {
			return true
		}
	}
	return false
}

// point is one deployment of the default space.
type point struct {
	label string
	sets  []string
}

// defaultTensors are the tensor sizes searched on gpu: the smallest of 1,
// 2, 4, 8 within budget that fits the model's weights, and the next one.
func defaultTensors(cfg *config.Config, gpu string, budget int) []int {
	m, errM := timing.LookupModel(cfg.Engine.Model)
	g, errG := timing.LookupGPU(gpu)
	var out []int
	for _, tp := range []int{1, 2, 4, 8} {
		if tp > budget || len(out) == 2 {
			break
		}
		if errM == nil && errG == nil && len(out) == 0 {
			// The same fit check as capacity {type: default}: weights
			// plus the runtime reserve within the memory fraction.
			if _, err := timing.EstimateBlocks(g, m, timing.Parallelism{Tensor: tp}, cfg.Engine.Workers.Aggregated.KVCache.Capacity.MemoryFraction, 64, 0); err != nil {
				continue
			}
		}
		out = append(out, tp)
	}
	return out
}

// defaultPoints lists gpu's deployments within budget (see above).
func defaultPoints(cfg *config.Config, gpu string, budget int, setGPU bool) []point {
	var out []point
	add := func(label string, sets ...string) {
		if setGPU {
			sets = append([]string{"engine.hardware=" + gpu}, sets...)
			label = gpu + " " + label
		}
		out = append(out, point{label, sets})
	}
	type router struct {
		label string
		sets  []string
	}
	routers := func(multi bool) []router {
		rr := router{"round_robin", []string{"router.policy=round_robin"}}
		if !multi {
			return []router{rr}
		}
		return []router{rr,
			{"kv_router", []string{"router.policy=kv_router", "router.prefill_load_scale=1"}},
			{fmt.Sprintf("kv_router prefill_load_scale %d", defaultAltLoadScale), []string{"router.policy=kv_router", fmt.Sprintf("router.prefill_load_scale=%d", defaultAltLoadScale)}},
		}
	}
	const agg, pre, dec = "engine.workers.aggregated.", "engine.workers.prefill.", "engine.workers.decode."
	for _, tp := range defaultTensors(cfg, gpu, budget) {
		n := budget / tp
		for _, r := range distinct(n, n/2) {
			for _, rt := range routers(r > 1) {
				for _, mbt := range []int{engine.DefaultMaxBatchedTokens, defaultAltBatchedTokens} {
					add(fmt.Sprintf("aggregated %d × TP%d, %s, max_batched_tokens %d", r, tp, rt.label, mbt),
						append([]string{"engine.mode=aggregated",
							fmt.Sprintf("%sparallelism.replicas=%d", agg, r), fmt.Sprintf("%sparallelism.tensor=%d", agg, tp),
							fmt.Sprintf("%sscheduler.max_batched_tokens=%d", agg, mbt)}, rt.sets...)...)
				}
			}
		}
		if n < 2 {
			continue
		}
		for _, p := range distinct(1, n/2) {
			d := n - p
			for _, rt := range routers(p > 1 || d > 1) {
				add(fmt.Sprintf("disaggregated %d prefill + %d decode × TP%d, %s", p, d, tp, rt.label),
					append([]string{"engine.mode=disaggregated",
						fmt.Sprintf("%sparallelism.replicas=%d", pre, p), fmt.Sprintf("%sparallelism.tensor=%d", pre, tp),
						fmt.Sprintf("%sparallelism.replicas=%d", dec, d), fmt.Sprintf("%sparallelism.tensor=%d", dec, tp)}, rt.sets...)...)
			}
		}
	}
	return out
}

// distinct is xs ≥ 1 without repeats, in order.
func distinct(xs ...int) []int {
	var out []int
	for _, x := range xs {
		if x >= 1 && (len(out) == 0 || out[len(out)-1] != x) {
			out = append(out, x)
		}
	}
	return out
}
