package schema

// The report's top-level sections, in the order its JSON has them (the
// fields of core/report's Report; a test there holds the two together).
const (
	SectionSummary       = "summary"
	SectionSLA           = "sla" // only with an SLA
	SectionVerdict       = "verdict"
	SectionDeployment    = "deployment" // absent from reports built without a config
	SectionWarnings      = "warnings"   // only when there is one
	SectionOutcomes      = "outcomes"
	SectionPools         = "pools"
	SectionWorkers       = "workers"
	SectionKVTransfer    = "kv_transfer" // disaggregated runs
	SectionKVTiers       = "kv_tiers"    // pools with KVBM lower tiers
	SectionEngine        = "engine"
	SectionDistributions = "distributions"
	SectionPlanner       = "planner"          // planner runs
	SectionTTFTBreakdown = "ttft_breakdown"   // absent when no request got a token
	SectionTimeline      = "request_timeline" // a watched request
	SectionTimeSeries    = "timeseries"
	SectionCoverage      = "coverage"
)

// Sections are the report's top-level sections, in order.
var Sections = []string{
	SectionSummary, SectionSLA, SectionVerdict, SectionDeployment, SectionWarnings, SectionOutcomes,
	SectionPools, SectionWorkers, SectionKVTransfer, SectionKVTiers, SectionEngine,
	SectionDistributions, SectionPlanner, SectionTTFTBreakdown, SectionTimeline,
	SectionTimeSeries, SectionCoverage,
}

// The sections of fixed shape follow. core/report fills them; the page
// decodes them; their JSON names are the report's keys.

// Outcomes says how the run's requests ended and why the run stopped.
type Outcomes struct {
	Completed  int            `json:"completed"`
	Rejected   int            `json:"rejected"`
	RejectedBy map[string]int `json:"rejected_by_reason"` // kv_capacity | max_model_len | max_batched_tokens
	Unfinished int            `json:"unfinished"`         // arrived, no terminal outcome
	StopReason string         `json:"stop_reason"`        // drained | max_virtual_time
}

// WorkerStats are per-worker counters.
type WorkerStats struct {
	Worker int    `json:"worker"`
	Pool   string `json:"pool"` // aggregated | prefill | decode
	// Planner runs: when the worker was added and removed (null: there at
	// the start, or to the end), and how long it was provisioned.
	AddedMs         *float64 `json:"added_ms,omitempty"`
	RemovedMs       *float64 `json:"removed_ms,omitempty"`
	ProvisionedMs   *float64 `json:"provisioned_ms,omitempty"`
	Requests        int      `json:"requests"`
	RequestShare    float64  `json:"request_share"` // of the requests routed to its pool: the router's balance
	OutputTokens    int      `json:"output_tokens"`
	Passes          int      `json:"passes"`
	BusyMs          float64  `json:"busy_ms"`
	Preemptions     int      `json:"preemptions"`
	PeakActiveBlock int      `json:"peak_active_blocks"`
	TotalBlocks     int      `json:"total_blocks"`
	Retractions     int      `json:"retractions"`      // SGLang; included in preemptions
	CacheHitTokens  int      `json:"cache_hit_tokens"` // SGLang prefill prefix tokens
	CacheTokens     int      `json:"cache_total_tokens"`
	AcceptedTokens  int      `json:"accepted_tokens"` // tokens emitted by decode forwards
	DecodeForwards  int      `json:"decode_forwards"` // request-forwards that emitted them
}

// EngineStats are the per-engine counters summed over workers.
type EngineStats struct {
	Retractions      int     `json:"retractions"`
	CacheHitRatio    float64 `json:"sglang_cache_hit_ratio"` // cache-hit / total prefill tokens (SGLang)
	MeanAcceptLength float64 `json:"mean_accept_length"`     // tokens per decode forward (1 without speculation)
}

// Distributions hold values at 0%, 1%, …, 100% of the latency
// distributions, for CDF plots.
type Distributions struct {
	TTFTMs []float64 `json:"ttft_ms"`
	ITLMs  []float64 `json:"itl_ms"`
	E2EMs  []float64 `json:"e2e_latency_ms"`
}

// Coverage says what the report holds.
type Coverage struct {
	CapturePerRequest bool `json:"capture_per_request"`
	PerRequestRecords int  `json:"per_request_records"`
	// traffic.warmup: the requests the figures leave out, and the simulated
	// time the measured window (duration and rates) starts at. Absent
	// without a warm-up.
	WarmupExcluded int      `json:"warmup_excluded_requests,omitempty"`
	WarmupEndMs    *float64 `json:"warmup_end_ms,omitempty"`
}

// PoolStats is a pool's section of the report; its workers are
// workers[first_worker : first_worker+workers].
type PoolStats struct {
	Name          string   `json:"name"`
	FirstWorker   int      `json:"first_worker"`
	Workers       int      `json:"workers"`
	GPUsPerWorker int      `json:"gpus_per_worker"`
	GPUs          int      `json:"gpus"`
	Requests      int      `json:"requests"`
	OutputTokens  int      `json:"output_tokens"`
	BusyMs        float64  `json:"busy_ms"`
	Utilization   *float64 `json:"utilization"` // busy time over workers × duration; null without simulated time
	Preemptions   int      `json:"preemptions"`
}

// TransferInfo is the handoff configuration a disaggregated run used.
type TransferInfo struct {
	Handoff       string   `json:"handoff"` // bootstrap | direct
	Order         string   `json:"order"`   // source_first | destination_first (bootstrap)
	TimingMode    string   `json:"timing_mode"`
	BytesPerToken float64  `json:"bytes_per_token"`
	BandwidthGBps *float64 `json:"bandwidth_gb_per_second"` // null: no delay
}

// TransferStats is the kv_transfer section of a disaggregated report.
type TransferStats struct {
	TransferInfo
	Handoffs          int      `json:"handoffs"` // transfers started
	TransferredTokens int      `json:"transferred_tokens"`
	TransferredBytes  float64  `json:"transferred_bytes"`
	TotalMs           float64  `json:"total_ms"`
	MeanMs            *float64 `json:"mean_ms"` // null without handoffs
	P99Ms             *float64 `json:"p99_ms"`
	ZeroTransfers     int      `json:"zero_transfers"` // nothing to move: the destination had the whole prompt
	// DecodeReusedRatio is the prompt tokens the decode side had cached
	// over the transferred requests' prompt tokens.
	DecodeReusedRatio *float64 `json:"decode_reused_ratio"`
}

// Deployment says what was simulated: per pool the GPU, the parallelism,
// the timing model with how far it can be trusted, and how each GPU's
// memory divides (weights, KV cache, reserve, free). The simulator fills
// it from the config; the page shows it as the timing badge and the
// memory-fit lines.
type Deployment struct {
	Mode    string           `json:"mode"`
	Backend string           `json:"backend"`
	Model   string           `json:"model"`
	Pools   []PoolDeployment `json:"pools"`
}

// PoolDeployment is one pool's part of the deployment. Bytes are per GPU.
type PoolDeployment struct {
	Name          string `json:"name"`
	Hardware      string `json:"hardware"`
	Replicas      int    `json:"replicas"`
	Tensor        int    `json:"tensor"`
	AttentionData int    `json:"attention_data"`
	GPUsPerWorker int    `json:"gpus_per_worker"`
	Timing        string `json:"timing"` // default | polynomial | fixed | profile
	// TimingProfile names the .npz a profile timing was read from (--profile,
	// an uploaded profile or timing.path); absent under the other timings.
	TimingProfile string `json:"timing_profile,omitempty"`
	// TimingKernels names, under timing type default, what priced the
	// pool's kernels: the measured kernel table and the parts that fell
	// back to the fitted curves, e.g. "aic vllm 0.24.0 h100_sxm (curves:
	// collectives)", or "curves" with why when no table did; absent under
	// the other timings.
	TimingKernels string  `json:"timing_kernels,omitempty"`
	Validation    string  `json:"validation"` // timing.Validation
	Capacity      string  `json:"capacity"`   // default | fixed
	KVBlocks      int     `json:"kv_blocks"`  // per attention rank
	BlockSize     int     `json:"block_size"`
	GPUBytes      float64 `json:"gpu_memory_bytes"`
	WeightsBytes  float64 `json:"weights_bytes"`
	KVBytes       float64 `json:"kv_cache_bytes"`
	ReserveBytes  float64 `json:"reserve_bytes"`
	FreeBytes     float64 `json:"free_bytes"` // negative: it does not fit
	Fits          bool    `json:"fits"`
}

// SLAInfo is the SLA a run's goodput was measured against (null: unset).
type SLAInfo struct {
	TTFTMs *float64 `json:"ttft_ms"`
	ITLMs  *float64 `json:"itl_ms"`
	E2EMs  *float64 `json:"e2e_ms"`
}

// Planner is the report's planner section. Its lists are bounded
// (core/report: at most 1,024 ticks and 4,096 worker steps): past the
// bound a list keeps every other entry and its stride doubles, so a long
// run's section stays the same size and still spans the whole run.
type Planner struct {
	NumTicks int `json:"num_ticks"` // ticks the planner ran
	// TickStride: ticks lists the ticks whose ordinal (tick) is a multiple
	// of it (1: every tick).
	TickStride int           `json:"tick_stride"`
	Ticks      []PlannerTick `json:"ticks"`
	// WorkerStepStride: workers keeps every stride-th step of each pool
	// (1: every change); the pools' peaks count every step.
	WorkerStepStride int          `json:"worker_step_stride"`
	Workers          []WorkerStep `json:"workers"`   // a step per change of a pool's workers, from t = 0
	GPUHours         float64      `json:"gpu_hours"` // provisioned GPUs (active, starting, draining) integrated over the run
	MeanGPUs         *float64     `json:"mean_gpus"` // gpu_hours over the duration
}

// PlannerTick is one tick.
type PlannerTick struct {
	Tick           int           `json:"tick"`
	TMs            float64       `json:"t_ms"`
	Reason         string        `json:"reason"`
	Pools          []PlannerPool `json:"pools"`
	Action         string        `json:"action"`      // scale_up (a target rose), scale_down (one fell, none rose) or hold; reason says why (issue 31 item 1)
	EstTTFTMs      *float64      `json:"est_ttft_ms"` // load-based estimates; null when not computed
	EstITLMs       *float64      `json:"est_itl_ms"`
	ObservedTTFTMs *float64      `json:"observed_ttft_ms"` // of the requests completed since the last tick
	ObservedITLMs  *float64      `json:"observed_itl_ms"`
	// Throughput-based: the traffic the predictor saw and predicted.
	ObservedRequests *float64 `json:"observed_requests"`
	ObservedISL      *float64 `json:"observed_isl"`
	ObservedOSL      *float64 `json:"observed_osl"`
	PredRequests     *float64 `json:"predicted_requests"`
	PredISL          *float64 `json:"predicted_isl"`
	PredOSL          *float64 `json:"predicted_osl"`
}

// PlannerPool is a pool at a tick: the target the planner set, its
// workers after the decision and the throughput floor in force.
type PlannerPool struct {
	Pool   string `json:"pool"`
	Target int    `json:"target"`
	WorkerCount
	Floor int `json:"floor"`
}

// WorkerCount is a pool's workers by state.
type WorkerCount struct {
	Active   int `json:"active"`
	Starting int `json:"starting"`
	Draining int `json:"draining"`
}

// WorkerStep is a pool's workers from TMs on.
type WorkerStep struct {
	TMs  float64 `json:"t_ms"`
	Pool string  `json:"pool"`
	WorkerCount
}

// TierPool is the report's kv_tiers entry of one pool with KVBM lower
// tiers: per tier its blocks, per directional link its traffic and
// utilisation, and both over time.
type TierPool struct {
	Pool               string     `json:"pool"`
	BlockBytes         float64    `json:"block_bytes"`
	OffloadBatchBlocks int        `json:"offload_batch_blocks"`
	Offload            string     `json:"offload"` // on_store (write-through) | on_evict
	Workers            int        `json:"workers"` // engine cores (DP ranks) with a G2 each
	Tiers              []TierStat `json:"tiers"`
	Links              []LinkStat `json:"links"`
	Series             TierSeries `json:"series"`
}

// TierStat is one tier's block counts over the run.
type TierStat struct {
	Tier           string `json:"tier"`            // g2 | g3 | g4
	Scope          string `json:"scope"`           // worker (g2) | shared (g3, g4)
	CapacityBlocks int    `json:"capacity_blocks"` // per worker for g2; 0: unbounded (g4)
	PeakBlocks     int    `json:"peak_blocks"`     // g2: summed over workers
	// HitBlocks are blocks an onboarding found here; OnboardedBlocks left
	// towards G1 (for G3/G4: staged into G2); OffloadedBlocks landed here
	// from the tier above; EvictedBlocks made room.
	HitBlocks       int64   `json:"hit_blocks"`
	OnboardedBlocks int64   `json:"onboarded_blocks"`
	OffloadedBlocks int64   `json:"offloaded_blocks"`
	EvictedBlocks   int64   `json:"evicted_blocks"`
	OnboardedBytes  float64 `json:"onboarded_bytes"`
	OffloadedBytes  float64 `json:"offloaded_bytes"`
}

// LinkStat is one directional link kind (per-worker links summed).
type LinkStat struct {
	Link          string  `json:"link"` // g1_to_g2, g2_to_g1, g2_to_g3, g3_to_g2, g2_to_g4, g4_to_g2
	Scope         string  `json:"scope"`
	Instances     int     `json:"instances"`
	BandwidthGBps float64 `json:"bandwidth_gb_per_second"` // 0: instant
	Transfers     int64   `json:"transfers"`
	Blocks        int64   `json:"blocks"`
	Bytes         float64 `json:"bytes"`
	BusyMs        float64 `json:"busy_ms"`     // summed over instances
	Utilization   float64 `json:"utilization"` // busy_ms / (duration × instances)
}

// TierSeries is tier occupancy and link utilisation per time bucket.
type TierSeries struct {
	BucketMs    float64      `json:"bucket_ms"`
	TMs         []float64    `json:"t_ms"`
	Occupancy   []TierLine   `json:"occupancy"`   // the most blocks held in the bucket
	Utilization []SeriesLine `json:"utilization"` // busy share of the bucket, per link kind
}

// TierLine is one tier's occupancy: blocks, and for bounded tiers the
// fraction of capacity.
type TierLine struct {
	Tier     string    `json:"tier"`
	Blocks   []int     `json:"blocks"`
	Fraction []float64 `json:"fraction,omitempty"`
}

// SeriesLine is one named series.
type SeriesLine struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
}

// BreakdownSection is the report's ttft_breakdown: each part's
// distribution over the completed requests that got a first token (the
// requests of mean_ttft_ms), in the order the parts happen.
type BreakdownSection struct {
	Requests   int             `json:"requests"`
	MeanTTFTMs float64         `json:"mean_ttft_ms"` // the parts' means add up to it
	Parts      []BreakdownPart `json:"parts"`
}

// BreakdownPart is one part's distribution.
type BreakdownPart struct {
	Part   string  `json:"part"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
}

// TimeSeries is the JSON form of a Series.
type TimeSeries struct {
	BucketMs         float64   `json:"bucket_ms"`
	TMs              []float64 `json:"t_ms"`
	OutputTokensPerS []float64 `json:"output_tokens_per_s"`
	CompletedPerS    []float64 `json:"completed_per_s"`
	PrefixReuseRatio []float64 `json:"prefix_reuse_ratio"`
	// Latency per window (issue 32 item 5) of the completed requests that
	// arrived in it: TTFT, and each request's mean inter-token latency
	// (the quantity goodput's ITL bound checks), p50 and p99; null for a
	// window where no such request arrived.
	TTFTP50Ms []*float64     `json:"ttft_p50_ms"`
	TTFTP99Ms []*float64     `json:"ttft_p99_ms"`
	ITLP50Ms  []*float64     `json:"itl_p50_ms"`
	ITLP99Ms  []*float64     `json:"itl_p99_ms"`
	Workers   []WorkerSeries `json:"workers"`
}

// WorkerSeries holds per-bucket means of one worker's pass-start samples.
type WorkerSeries struct {
	Running []float64 `json:"running"`
	Waiting []float64 `json:"waiting"`
	KVUsage []float64 `json:"kv_usage"`
}

// Keys of the request_timeline section: the watched request and its events.
const (
	TimelineUUID   = "uuid"
	TimelineEvents = "events"
)

// Keys of a request_timeline event (the page reads events as objects, so
// that an event kind a newer core adds still lists). A field that does not
// apply to an event is absent.
const (
	TimelineTMs           = "t_ms"
	TimelineEvent         = "event" // one of the Event kinds below
	TimelinePool          = "pool"
	TimelineWorker        = "worker"
	TimelineDPRank        = "dp_rank"
	TimelineEndMs         = "end_ms"
	TimelinePassMs        = "pass_ms"
	TimelineBatchRequests = "batch_requests"
	TimelinePrefillTokens = "prefill_tokens"
	TimelineDecodeTokens  = "decode_tokens"
	TimelineTokens        = "tokens" // emitted (pass) or moved (kv_transfer)
	TimelineBytes         = "bytes"
	TimelineOverlapTokens = "overlap_tokens"
	TimelineReusedTokens  = "reused_tokens"
	TimelineInputLength   = "input_length"
	TimelineOutputLength  = "output_length"
	TimelineReason        = "reason"
)

// TimelineKeys are the keys of a timeline event, in the report's order.
var TimelineKeys = []string{
	TimelineTMs, TimelineEvent, TimelinePool, TimelineWorker, TimelineDPRank, TimelineEndMs, TimelinePassMs,
	TimelineBatchRequests, TimelinePrefillTokens, TimelineDecodeTokens, TimelineTokens, TimelineBytes,
	TimelineOverlapTokens, TimelineReusedTokens, TimelineInputLength, TimelineOutputLength, TimelineReason,
}

// The kinds of timeline event (the value of its "event" key).
const (
	EventArrival     = "arrival"
	EventRouted      = "routed"
	EventAdmitted    = "admitted"
	EventParked      = "parked" // waiting for lower-tier blocks to onboard
	EventPass        = "pass"
	EventPreempted   = "preempted"
	EventFirstToken  = "first_token"
	EventPrefillDone = "prefill_done" // disaggregated
	EventKVTransfer  = "kv_transfer"  // disaggregated
	EventCompleted   = "completed"
	EventRejected    = "rejected"
)

// EventKinds are the kinds of timeline event.
var EventKinds = []string{
	EventArrival, EventRouted, EventAdmitted, EventParked, EventPass, EventPreempted,
	EventFirstToken, EventPrefillDone, EventKVTransfer, EventCompleted, EventRejected,
}

// Fields of a requests.jsonl record (one request's metrics; core/report's
// RequestRecord). A value that does not exist for the request is null; the
// disaggregated fields are absent from other runs.
const (
	RecordUUID                    = "uuid"
	RecordArrivalTimeMs           = "arrival_time_ms"
	RecordFirstAdmitMs            = "first_admit_ms"
	RecordFirstTokenMs            = "first_token_ms"
	RecordLastTokenMs             = "last_token_ms"
	RecordTerminalTimeMs          = "terminal_time_ms"
	RecordTTFTMs                  = "ttft_ms"
	RecordTTSTMs                  = "ttst_ms"
	RecordITLMs                   = "itl_ms"
	RecordE2ELatencyMs            = "e2e_latency_ms"
	RecordInputLength             = "input_length"
	RecordRequestedOutputLength   = "requested_output_length"
	RecordOutputLength            = "output_length"
	RecordReusedInputTokens       = "reused_input_tokens"
	RecordWorker                  = "worker"
	RecordDPRank                  = "dp_rank"
	RecordTerminalStatus          = "terminal_status"
	RecordRejectionReason         = "rejection_reason"
	RecordRouterOverlapTokens     = "router_overlap_tokens"
	RecordRouterQueueMs           = "router_queue_ms"
	RecordTTFTBreakdownMs         = "ttft_breakdown_ms" // an object of the TTFT's parts
	RecordWarmup                  = "warmup"            // true for a traffic.warmup request (absent otherwise)
	RecordPrefillWorker           = "prefill_worker"
	RecordPrefillDPRank           = "prefill_dp_rank"
	RecordDecodeReusedInputTokens = "decode_reused_input_tokens"
	RecordKVTransferTokens        = "kv_transfer_tokens"
	RecordKVTransferBytes         = "kv_transfer_bytes"
	RecordKVTransferStartMs       = "kv_transfer_start_ms"
	RecordKVTransferMs            = "kv_transfer_ms"
)

// RecordKeys are the fields of a requests.jsonl record, in order.
var RecordKeys = []string{
	RecordUUID, RecordArrivalTimeMs, RecordFirstAdmitMs, RecordFirstTokenMs, RecordLastTokenMs,
	RecordTerminalTimeMs, RecordTTFTMs, RecordTTSTMs, RecordITLMs, RecordE2ELatencyMs, RecordInputLength,
	RecordRequestedOutputLength, RecordOutputLength, RecordReusedInputTokens, RecordWorker, RecordDPRank,
	RecordTerminalStatus, RecordRejectionReason, RecordRouterOverlapTokens, RecordRouterQueueMs,
	RecordTTFTBreakdownMs, RecordWarmup, RecordPrefillWorker, RecordPrefillDPRank, RecordDecodeReusedInputTokens,
	RecordKVTransferTokens, RecordKVTransferBytes, RecordKVTransferStartMs, RecordKVTransferMs,
}
