// Package schema names the report's keys and sections once. It imports
// only the standard library, so every front end (CLI, page, Worker) and
// every consumer in the core reads the report through these names rather
// than by string literal, and the JavaScript tests check against the key
// list generated from them (report-keys.json).
package schema

// Scalar keys of the summary map (spec §8.8 and our additions). A key
// that is undefined for a run holds NaN in Go and null in JSON.
const (
	NumRequests        = "num_requests"
	CompletedRequests  = "completed_requests"
	RejectedRequests   = "rejected_requests"
	UnfinishedRequests = "unfinished_requests"
	NumPreemptions     = "num_preemptions" // preemptions and retractions summed over workers

	TotalInputTokens  = "total_input_tokens"
	TotalOutputTokens = "total_output_tokens"
	DurationMs        = "duration_ms" // simulated time until the last request ended

	RequestThroughputRPS = "request_throughput_rps"
	InputThroughputTokS  = "input_throughput_tok_s"
	OutputThroughputTokS = "output_throughput_tok_s"
	TotalThroughputTokS  = "total_throughput_tok_s"

	PrefixCacheReusedRatio      = "prefix_cache_reused_ratio" // every engine: cached prompt tokens at admission, once per request
	FirstAdmissionReusedRatio   = "first_admission_prefix_cache_reused_ratio"
	SGLangCacheHitRatio         = "sglang_cache_hit_ratio" // SGLang runs only: the reference mocker's hit / total tokens over every prefill chunk
	RouterEstimatedOverlapRatio = "router_estimated_overlap_ratio"
	MeanRouterQueueMs           = "mean_router_queue_ms"
	GoodputCompletedRequests    = "goodput_completed_requests"      // only with an SLA
	GoodputRequestThroughputRPS = "goodput_request_throughput_rps"  // only with an SLA
	GoodputOutputThroughputTokS = "goodput_output_throughput_tok_s" // only with an SLA
	KVTransferHandoffs          = "kv_transfer_handoffs"            // disaggregated runs
	KVTransferBytes             = "kv_transfer_bytes"               // disaggregated runs
	MeanKVTransferMs            = "mean_kv_transfer_ms"             // disaggregated runs
	PrefillWorkerSeconds        = "prefill_worker_seconds"
	PrefillGPUsPerWorker        = "prefill_gpus_per_worker"
	DecodeWorkerSeconds         = "decode_worker_seconds" // an aggregated pool counts as decode
	DecodeGPUsPerWorker         = "decode_gpus_per_worker"
	GPUHours                    = "gpu_hours"
	TotalGPUs                   = "total_gpus"
	MeanGPUs                    = "mean_gpus" // planner runs
	ProcessedTokens             = "processed_tokens"
	WallTimeMs                  = "wall_time_ms"                  // wall clock
	ProcessedTokensPerS         = "processed_tokens_per_s"        // wall clock
	ProcessedOutputTokensPerS   = "processed_output_tokens_per_s" // wall clock
)

// Scalars are the summary's scalar keys, in the order above.
var Scalars = []string{
	NumRequests, CompletedRequests, RejectedRequests, UnfinishedRequests, NumPreemptions,
	TotalInputTokens, TotalOutputTokens, DurationMs,
	RequestThroughputRPS, InputThroughputTokS, OutputThroughputTokS, TotalThroughputTokS,
	PrefixCacheReusedRatio, FirstAdmissionReusedRatio, SGLangCacheHitRatio, RouterEstimatedOverlapRatio, MeanRouterQueueMs,
	GoodputCompletedRequests, GoodputRequestThroughputRPS, GoodputOutputThroughputTokS,
	KVTransferHandoffs, KVTransferBytes, MeanKVTransferMs,
	PrefillWorkerSeconds, PrefillGPUsPerWorker, DecodeWorkerSeconds, DecodeGPUsPerWorker,
	GPUHours, TotalGPUs, MeanGPUs, ProcessedTokens,
	WallTimeMs, ProcessedTokensPerS, ProcessedOutputTokensPerS,
}

// Recommend's ledger keeps some summary keys of each trial as its metrics
// and adds these, derived from them.
const (
	AvgGPUs                    = "avg_gpus" // time-averaged provisioned GPUs
	OutputThroughputPerGPUTokS = "output_throughput_per_gpu_tok_s"
	GoodputPerGPURPS           = "goodput_per_gpu_rps"
	MaxRate                    = "max_rate" // the max_rate target's highest rate meeting the SLA
)

// LedgerMetrics are the metrics recommend adds beside the summary keys.
var LedgerMetrics = []string{AvgGPUs, OutputThroughputPerGPUTokS, GoodputPerGPURPS, MaxRate}

// WallClockKeys are the summary keys that depend on the machine, not the
// inputs: two runs of the same inputs differ only in these.
var WallClockKeys = []string{WallTimeMs, ProcessedTokensPerS, ProcessedOutputTokensPerS}

// IsWallClock says whether key is one of WallClockKeys.
func IsWallClock(key string) bool {
	return key == WallTimeMs || key == ProcessedTokensPerS || key == ProcessedOutputTokensPerS
}

// Family is a distribution the summary describes by its statistics
// (Stats): the key of statistic s of family f is s_f, e.g. p99_ttft_ms.
type Family string

// The summary's distributions, in the order the report computes them.
const (
	TTFT      Family = "ttft_ms"
	TTST      Family = "ttst_ms"
	TPOT      Family = "tpot_ms"
	E2E       Family = "e2e_latency_ms"
	ITL       Family = "itl_ms"
	PerUser   Family = "output_token_throughput_per_user" // tokens/s one streaming user sees
	InputLen  Family = "input_sequence_length"
	OutputLen Family = "output_sequence_length"
)

// Families are the summary's distributions.
var Families = []Family{TTFT, TTST, TPOT, E2E, ITL, PerUser, InputLen, OutputLen}

// Stat is a statistic of a distribution.
type Stat string

// The statistics every family has.
const (
	Mean   Stat = "mean"
	Min    Stat = "min"
	Max    Stat = "max"
	Std    Stat = "std" // population standard deviation
	Median Stat = "median"
	P75    Stat = "p75"
	P90    Stat = "p90"
	P95    Stat = "p95"
	P99    Stat = "p99"
)

// Stats are the statistics of every family.
var Stats = []Stat{Mean, Min, Max, Std, Median, P75, P90, P95, P99}

// Key is the summary key of statistic s of the family: "p99_ttft_ms".
func (f Family) Key(s Stat) string { return string(s) + "_" + string(f) }

// SummaryKeys are every key a summary may hold: the scalars, then each
// family's statistics.
func SummaryKeys() []string {
	keys := append([]string(nil), Scalars...)
	for _, f := range Families {
		for _, s := range Stats {
			keys = append(keys, f.Key(s))
		}
	}
	return keys
}
