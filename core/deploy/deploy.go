// Package deploy renders a resolved simulation config as something a user
// can run: launch.sh (one command per worker replica, single-host or per
// node) and dgd.yaml (a Dynamo DynamoGraphDeployment for the same
// topology). It is pure: it returns bytes and leaves writing them to the
// front end (recommend --output-dir writes deploy/NNNN/). docs/deploy.md
// lists which fields are filled and which the user completes.
//
// Sources for the shapes rendered here (ai-dynamo/dynamo, public):
//   - examples/backends/{vllm,sglang,trtllm}/deploy/{agg,disagg,agg_router}.yaml:
//     apiVersion nvidia.com/v1alpha1, kind DynamoGraphDeployment, services
//     with componentType frontend|worker, subComponentType prefill|decode,
//     replicas, resources.limits.gpu, extraPodSpec.mainContainer
//     {image, command [python3 -m dynamo.<backend>], args}; the frontend's
//     router mode as env DYN_ROUTER_MODE.
//   - examples/backends/vllm/launch/disagg_router.sh: python -m
//     dynamo.frontend --router-mode kv, workers started with
//     CUDA_VISIBLE_DEVICES, --is-prefill-worker / --is-decode-worker, a
//     distinct VLLM_NIXL_SIDE_CHANNEL_PORT and --kv-events-config endpoint
//     per worker on one host.
//   - dynamo.frontend's arguments: --router-mode round-robin|random|kv,
//     --kv-overlap-score-weight, --router-temperature, --no-kv-events,
//     --router-ttl (env DYN_ROUTER_MODE, DYN_KV_OVERLAP_SCORE_WEIGHT,
//     DYN_ROUTER_TEMPERATURE, DYN_KV_EVENTS, DYN_ROUTER_TTL).
//
// ../shared/spec/upstream-2026.md §1.5 names the upstream equivalent
// (AISimulate's recommend with --output dgd renders a DynamoGraphDeployment).
package deploy

import (
	"fmt"
	"strings"

	"github.com/dynosim/dynosim-web/core/config"
)

// GPUsPerNode packs workers onto hosts in launch.sh (an 8-GPU node, as the
// H100/H200/B200 HGX boards the catalog names). A worker needing more is
// a multi-node worker, which this renderer refuses.
const GPUsPerNode = 8

// Placeholders the user completes.
const (
	ImagePlaceholder = "IMAGE_COMPLETE_ME" // container image with Dynamo and the backend
	ModelPlaceholder = "MODEL_PATH"        // HF id or local path when engine.model is not in the catalog
	DraftPlaceholder = "DRAFT_MODEL_PATH"  // EAGLE draft head
	HFSecret         = "hf-token-secret"   // Kubernetes secret holding HF_TOKEN, as upstream's examples
)

// hfModels maps catalog names (timing/catalog.go) to Hugging Face ids.
var hfModels = map[string]string{
	"llama-3.1-8b":          "meta-llama/Llama-3.1-8B-Instruct",
	"llama-3.1-70b":         "meta-llama/Llama-3.1-70B-Instruct",
	"qwen3-32b":             "Qwen/Qwen3-32B",
	"qwen3-30b-a3b":         "Qwen/Qwen3-30B-A3B",
	"qwen3-235b-a22b":       "Qwen/Qwen3-235B-A22B",
	"deepseek-v3":           "deepseek-ai/DeepSeek-V3",
	"mistral-7b":            "mistralai/Mistral-7B-Instruct-v0.3",
	"llama-2-7b":            "meta-llama/Llama-2-7b-hf",
	"mistral-nemo-12b":      "mistralai/Mistral-Nemo-Instruct-2407",
	"qwen2.5-7b":            "Qwen/Qwen2.5-7B-Instruct",
	"yi-34b":                "01-ai/Yi-34B",
	"llama-4-scout-17b-16e": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
}

// SimulationOnly are the config sections that describe the simulation,
// not the deployment; Render ignores them.
var SimulationOnly = []string{
	"traffic", "evaluation", "execution", "engine.semantics", "engine.hardware (the GPU type: complete the node selector)",
	"engine.kv_transfer (NIXL moves the KV; the handoff and bandwidth are models)",
	"engine.workers.*.timing", "engine.workers.*.startup_seconds", "engine.workers.*.scheduler.preemption",
	"engine.workers.*.kv_cache.g1_backend", "router.prefill_load_scale", "router.prefill_load_model",
	"router.host_cache_hit_weight", "router.disk_cache_hit_weight", "router.kv.overlap_score_credit_decay",
	"router.kv.decode_active_request_weight", "router.kv.queue",
}

// worker is one role's worker kind as deployed.
type worker struct {
	role string // aggregated | prefill | decode
	path string // config path of the role, for errors
	r    *config.Role
	gpus int // per replica: tensor × pipeline × attention_data
}

// plan is what both files are rendered from.
type plan struct {
	cfg     *config.Config
	backend string
	model   string // HF id or ModelPlaceholder
	known   bool   // model came from the catalog
	workers []worker
}

// Render returns launch.sh and dgd.yaml for cfg, a config resolved by
// config.Parse. It refuses, with an error naming the key, what neither
// file can express.
func Render(cfg *config.Config) (launch, dgd []byte, err error) {
	p, err := newPlan(cfg)
	if err != nil {
		return nil, nil, err
	}
	launch, err = p.launch()
	if err != nil {
		return nil, nil, err
	}
	dgd, err = p.dgd()
	if err != nil {
		return nil, nil, err
	}
	return launch, dgd, nil
}

func newPlan(cfg *config.Config) (*plan, error) {
	if cfg == nil {
		return nil, fmt.Errorf("deploy: nil config")
	}
	e := &cfg.Engine
	p := &plan{cfg: cfg, backend: e.Backend}
	switch e.Backend {
	case "vllm", "sglang", "trtllm":
	default:
		return nil, fmt.Errorf("engine.backend: %q cannot be deployed (vllm, sglang or trtllm)", e.Backend)
	}
	p.model, p.known = hfModels[e.Model]
	if !p.known {
		p.model = ModelPlaceholder
	}
	switch e.Mode {
	case "aggregated":
		p.workers = []worker{{role: "aggregated", path: "engine.workers.aggregated", r: &e.Workers.Aggregated}}
	case "disaggregated":
		p.workers = []worker{
			{role: "prefill", path: "engine.workers.prefill", r: &e.Workers.Prefill},
			{role: "decode", path: "engine.workers.decode", r: &e.Workers.Decode},
		}
	default:
		return nil, fmt.Errorf("engine.mode: %q cannot be deployed (aggregated or disaggregated)", e.Mode)
	}
	if cfg.Planner.Policy == "enabled" {
		return nil, fmt.Errorf("planner.policy: enabled is not rendered (Dynamo's planner needs its own service and profiling data); render with planner.policy disabled and add the planner by hand")
	}
	switch e.DType {
	case "auto", "", "bf16", "fp16":
	case "fp8":
		if e.Backend == "trtllm" {
			return nil, fmt.Errorf("engine.dtype: fp8 on trtllm needs a pre-quantized checkpoint (ModelOpt); point engine.model at one and set engine.dtype auto")
		}
	default:
		return nil, fmt.Errorf("engine.dtype: %s needs a pre-quantized checkpoint; point engine.model at one and set engine.dtype auto", e.DType)
	}
	if s := &e.Speculation; s.Enabled() && (e.Backend == "trtllm" || e.Backend == "sglang" && s.Kind == "ngram") {
		return nil, fmt.Errorf("engine.speculation.kind: %s on %s is not rendered; configure it by hand", s.Kind, e.Backend)
	}
	for i := range p.workers {
		w := &p.workers[i]
		par := &w.r.Parallelism
		w.gpus = par.Tensor * par.Pipeline * par.AttentionData
		switch {
		case par.Replicas < 1:
			return nil, fmt.Errorf("%s.parallelism.replicas: must be ≥ 1 to deploy, got %d", w.path, par.Replicas)
		case w.gpus > GPUsPerNode:
			return nil, fmt.Errorf("%s.parallelism: %d GPUs per worker span nodes (> %d); multi-node workers are not rendered", w.path, w.gpus, GPUsPerNode)
		case par.MoETensor > 1 && par.MoEExpert > 1:
			return nil, fmt.Errorf("%s.parallelism: moe_tensor and moe_expert both > 1 is not rendered (the engines' expert parallelism takes all the worker's ranks)", w.path)
		case par.MoEExpert > 1 && par.MoEExpert != par.Tensor*par.AttentionData:
			return nil, fmt.Errorf("%s.parallelism.moe_expert: %d must equal tensor × attention_data (%d), the ranks the engines' expert parallelism spans", w.path, par.MoEExpert, par.Tensor*par.AttentionData)
		}
		kv := &w.r.KVCache
		if kv.Tiers.G2.Blocks > 0 {
			return nil, fmt.Errorf("%s.kv_cache.tiers.g2.blocks: KVBM lower tiers are not rendered (they need the KVBM connector and its sizing); set 0 or add the connector by hand", w.path)
		}
		if kv.Capacity.Bytes > 0 && e.Backend != "vllm" {
			return nil, fmt.Errorf("%s.kv_cache.capacity.bytes: a byte budget is only rendered for vllm (--kv-cache-memory-bytes); use blocks or memory_fraction", w.path)
		}
	}
	return p, nil
}

// header is the comment block both files open with.
func (p *plan) header() []string {
	e := &p.cfg.Engine
	total := 0
	var topo []string
	for _, w := range p.workers {
		par := w.r.Parallelism
		total += w.gpus * par.Replicas
		topo = append(topo, fmt.Sprintf("%s: %d × (TP %d, PP %d, DP %d, EP %d) = %d GPUs", w.role, par.Replicas,
			par.Tensor, par.Pipeline, par.AttentionData, par.MoEExpert, w.gpus*par.Replicas))
	}
	model := p.model + " (from engine.model " + e.Model + ")"
	if !p.known {
		model = ModelPlaceholder + " — COMPLETE: engine.model " + e.Model + " is not in the catalog; give its HF id or path"
	}
	h := []string{
		"Rendered by dynosim (core/deploy) from a simulated configuration; see docs/deploy.md.",
		fmt.Sprintf("Backend %s, mode %s, router %s, hardware %s, %d GPUs in all.", e.Backend, e.Mode, p.cfg.Router.Policy, e.Hardware, total),
	}
	for _, t := range topo {
		h = append(h, "  "+t)
	}
	h = append(h,
		"FILLED: model id, parallelism, replicas, GPUs per worker, batching (max sequences,",
		"  max batched tokens, chunked prefill, max model length, scheduling policy), KV settings",
		"  (block size, memory fraction or fixed capacity, KV dtype, prefix caching), dtype,",
		"  speculation, router mode and its knobs.",
		"YOU COMPLETE: container image ("+ImagePlaceholder+"), model path if "+ModelPlaceholder+",",
		"  the HF token secret ("+HFSecret+"), node selection for "+e.Hardware+", etcd/NATS (launch.sh),",
		"  and anything the simulator does not model (e.g. --enforce-eager, tokenizer flags).",
		"Model: "+model,
		"Simulation-only, omitted: "+strings.Join(SimulationOnly, ", ")+".",
	)
	return h
}
