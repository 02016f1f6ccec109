package metrics

import (
	"strings"

	"github.com/dynosim/dynosim-web/core/report/schema"
)

// Term is one glossary entry.
type Term struct{ Name, Text string }

// Glossary explains the metrics and the config fields people confuse, in
// reading order, then the parts of the TTFT breakdown. The page shows it as
// its help section; tooltips use Help.
var Glossary = append(terms, ttftTerms()...)

var terms = []Term{
	{"TTFT", "Time to first token: from a request's arrival to its first output token. It includes waiting in the router and the engine, the prefill of the prompt (in chunks with chunked prefill), time lost to preemption and, when disaggregated, the KV transfer."},
	{"TTST", "Time to second token: the gap between the first and second output tokens. It is one decode step unless the request was preempted or shared its step with long prefills."},
	{"ITL", "Inter-token latency: the gap between consecutive output tokens of a request, over all gaps of all requests (AIPerf's definition)."},
	{"TPOT", "Time per output token: a request's (last token − first token) / (output tokens − 1); its mean is the per-request ITL."},
	{"Request latency", "End to end: from arrival to the last output token."},
	{"Per-user throughput", "Output tokens per second one streaming user sees: 1000 / inter-token gap."},
	{"Goodput", "Completed requests (and their tokens) per simulated second that met every SLA bound: TTFT ≤ ttft_ms, per-request ITL ≤ itl_ms (skipped for one-token outputs), or E2E ≤ e2e_ms. It answers \"do I meet my SLA?\"."},
	{"SLA", "evaluation.sla: the bounds goodput is measured against (ttft_ms, itl_ms, or e2e_ms alone)."},
	{"Output throughput per GPU", "Output tokens per simulated second divided by the GPUs the deployment uses (every pool's workers × GPUs per worker)."},
	{"Prefix reuse", "prefix_cache_reused_ratio: prompt tokens served from the prefix cache over all prompt tokens, at each request's largest admission. The same for every engine: a chunked prefill's later chunks are not admissions (they find the request's own earlier chunks)."},
	{"SGLang cache hit", "sglang_cache_hit_ratio (SGLang runs only): the reference mocker's sglang_cache_hit_tokens over sglang_cache_total_tokens, cached over all tokens of every prefill chunk, so a long prompt's later chunks count its own earlier ones and it can far exceed prefix reuse (SGLang's own cache_hit_rate counts a next chunk with no hit tokens)."},
	{"First-admission reuse", "first_admission_prefix_cache_reused_ratio: the same at each request's first admission only; a preempted request re-admitted later reuses its own blocks, which is not prefix sharing."},
	{"Preemption", "vLLM frees a running request's KV blocks when the pool is full and recomputes it later (SGLang: retraction). Many preemptions mean the KV cache is too small for the load."},
	{"KV cache usage", "Active blocks over the pool's blocks, per worker, after each pass's scheduling."},
	{"Trace block_size", "traffic.source.block_size: how many tokens one hash id of a Mooncake trace stands for (512 in the public traces). It describes the trace, not the engine."},
	{"KV block_size", "engine.workers.<role>.kv_cache.block_size: tokens per KV-cache block (page) in the engine: vLLM 64, TensorRT-LLM 32, SGLang 1 by default. Prefix reuse is counted in whole blocks."},
	{"Capacity", "kv_cache.capacity: how many KV blocks a worker has. type default sizes the pool from GPU memory after the weights (memory_fraction); type fixed uses blocks or bytes as given."},
	{"Chunked prefill", "scheduler.chunked_prefill: a long prompt is prefilled over several passes of at most max_batched_tokens, so decodes keep running between its chunks."},
	{"max_batched_tokens", "scheduler.max_batched_tokens: the token budget of one pass (prefill chunks plus one token per decoding request)."},
	{"Timing model", "engine.workers.<role>.timing: how long a pass takes. default is the roofline of engine.model on engine.hardware; polynomial is the reference's uncalibrated curve (hardware ignored); fixed uses given milliseconds; profile reads a measured .npz table."},
	{"Disaggregation", "engine.mode disaggregated: prompts run on prefill workers, output tokens on decode workers, and each request's KV moves between them (engine.kv_transfer)."},
	{"destination_missing", "engine.kv_transfer.timing_mode: charge only the prompt blocks the decode worker does not have cached; full_prompt charges the whole prompt."},
	{"KV tiers", "kv_cache.tiers: KVBM's lower tiers under a kvbm G1 (vLLM, TensorRT-LLM): a G2 host pool per engine core, a G3 disk pool and a G4 object store shared by the role's workers. Blocks G1 evicts are copied down (offloaded); a prompt whose prefix a lower tier holds gets it back (onboarded) instead of recomputing it."},
	{"Offload", "G1 blocks are copied to G2 in batches of offload_batch_blocks and written through to G3 and G4. Under offload on_store (write-through, the default under engine.semantics real) a block is copied when G1 stores it, and G1 frees it at once on eviction if G2 holds it; under on_evict (the reference mocker's) it is copied when G1 evicts it, and its G1 slot stays reserved until the copy ends, so an allocation that needs it waits. offloaded_blocks counts the blocks that landed in a tier."},
	{"Onboarding", "At admission, the prompt blocks after the G1-cached prefix that a lower tier holds come back to G1 slots reserved for them (G3 and G4 hits stage through G2); the request waits (parks) until they arrive. hit_blocks counts the blocks found per tier."},
	{"Link utilisation", "The share of the run a directional tier link (g1_to_g2, g2_to_g1, g2_to_g3, …) carried at least one copy, per link: concurrent copies share its bandwidth (processor sharing)."},
	{"Simulated vs wall time", "Durations and rates are in simulated time. Wall time is how long the simulator took on this machine; it is never part of a prediction or a comparison."},
}

// Help is the tooltip of a summary key ("p99_ttft_ms", "goodput_completed_requests"),
// or "" when it has none.
func Help(key string) string {
	if h, ok := help[key]; ok {
		return h
	}
	for _, s := range schema.Stats {
		if stem, ok := strings.CutPrefix(key, string(s)+"_"); ok {
			if h, ok := help[stem]; ok {
				return h
			}
		}
	}
	return ""
}

func term(name string) string {
	for _, t := range Glossary {
		if t.Name == name {
			return t.Text
		}
	}
	panic("metrics: no glossary term " + name) // a typo here fails every test at init
}

var help = func() map[string]string {
	m := map[string]string{
		string(schema.TPOT):                "Time per output token of a request: (last − first token) / (tokens − 1).",
		schema.CompletedRequests:           "Requests that produced all their output.",
		schema.RejectedRequests:            "Requests that could never run (e.g. a prompt larger than the KV pool).",
		schema.UnfinishedRequests:          "Requests still running when the run stopped (max_virtual_time_seconds).",
		schema.NumPreemptions:              "Times a running request lost its KV blocks and was recomputed later.",
		schema.DurationMs:                  "Simulated time until the last request ended.",
		schema.TotalInputTokens:            "Prompt tokens of completed requests.",
		schema.TotalOutputTokens:           "Output tokens of completed requests.",
		schema.PrefixCacheReusedRatio:      term("Prefix reuse"),
		schema.FirstAdmissionReusedRatio:   term("First-admission reuse"),
		schema.SGLangCacheHitRatio:         term("SGLang cache hit"),
		schema.GoodputCompletedRequests:    "Completed requests that met every SLA bound.",
		schema.GoodputOutputThroughputTokS: "Output tokens per simulated second of the requests that met every SLA bound.",
		schema.TotalGPUs:                   "GPUs of the deployment: every pool's workers × GPUs per worker.",
		schema.GPUHours:                    "GPUs × simulated hours they were provisioned.",
		schema.MeanRouterQueueMs:           "Mean time a request waited in the router before placement.",
		schema.RouterEstimatedOverlapRatio: "The prompt share the KV router expected to find cached where it placed requests.",
		schema.KVTransferBytes:             "KV bytes moved from prefill to decode workers.",
		schema.MeanKVTransferMs:            "Mean modeled time of one prefill→decode KV transfer.",
		schema.WallTimeMs:                  term("Simulated vs wall time"),
	}
	for _, r := range append(append([]Metric(nil), Rows...), Lines...) {
		m[r.Key] = r.Help
	}
	return m
}()
