package metrics

import (
	"strconv"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// The vllm:* family, for BackendVLLM and BackendTRTLLM.
//
// Labels: model_name, engine, worker, dp_rank. vLLM's own label set is
// {model_name, engine}, where engine is the index of the data-parallel
// engine core behind one API server, i.e. the DP rank; dynosim keeps that
// meaning (engine == dp_rank) and adds worker (see the package comment).
// vllm:request_success_total adds finished_reason; vllm:cache_config_info
// adds the cache configuration (block_size, cache_dtype, num_gpu_blocks,
// num_cpu_blocks, the subset llm-d-inference-sim exports).
//
// Where the observations come from:
//
//   - SetLoad: vllm:num_requests_running, vllm:num_requests_waiting,
//     vllm:kv_cache_usage_perc (0..1).
//   - Preempted: vllm:num_preemptions_total.
//   - PrefixQuery: vllm:prefix_cache_queries_total, vllm:prefix_cache_hits_total
//     (tokens, as vLLM counts them).
//   - FirstToken: vllm:time_to_first_token_seconds,
//     vllm:request_queue_time_seconds, vllm:request_prefill_time_seconds, and
//     one vllm:generation_tokens_total.
//   - Token: vllm:inter_token_latency_seconds and
//     vllm:time_per_output_token_seconds (one observation each), and one
//     vllm:generation_tokens_total. vLLM v1 counts generated tokens per
//     engine step, so the counter moves while requests stream.
//   - Finished: vllm:request_success_total{finished_reason},
//     vllm:prompt_tokens_total, vllm:e2e_request_latency_seconds,
//     vllm:request_decode_time_seconds, vllm:request_inference_time_seconds,
//     vllm:request_time_per_output_token_seconds, vllm:request_prompt_tokens,
//     vllm:request_generation_tokens, vllm:request_max_num_generation_tokens,
//     vllm:request_params_max_tokens.
//   - SpecDecode: vllm:spec_decode_num_drafts_total,
//     vllm:spec_decode_num_draft_tokens_total and
//     vllm:spec_decode_num_accepted_tokens_total (vLLM V1's SpecDecodingProm,
//     vllm/v1/spec_decode/metrics.py: counters, so exposed with _total).
//     Their series appear with the first speculative forward: vLLM creates
//     them only when speculative decoding is configured.
//
// vllm:time_per_output_token_seconds: in vLLM v1 this was always a per-token
// histogram, observed with each inter-token gap; v0.11 renamed it
// vllm:inter_token_latency_seconds, kept the old name as a deprecated alias
// (hidden from v0.12) and added vllm:request_time_per_output_token_seconds,
// one observation per request of decode time / (generated − 1). dynosim
// exports all three, as llm-d-inference-sim does, so consumers of either
// vLLM generation work; the per-request one is observed only for requests
// with at least two tokens.
//
// Differences from vLLM, all because the driver reports less than an engine
// knows: prompt tokens are counted when the request finishes, not when its
// prefill completes; queue and prefill time are observed at the first token
// rather than at finish, so requests aborted before their first token do not
// contribute to them.
type vllmFamily struct {
	model string
	cache Cache
	role  bool // series carry worker_type

	running, waiting, kvUsage, cacheInfo *prometheus.GaugeVec

	prefixQueries, prefixHits, preemptions    *prometheus.CounterVec
	promptTokens, genTokens, success          *prometheus.CounterVec
	specDrafts, specDraftTokens, specAccepted *prometheus.CounterVec

	ttft, itl, tpot, reqTPOT                *prometheus.HistogramVec
	e2e, queue, prefill, decode, inference  *prometheus.HistogramVec
	promptHist, genHist, maxGenHist, maxTok *prometheus.HistogramVec
}

// vllmLabels are the per-rank labels of every vllm:* series, in order.
var vllmLabels = []string{labelModel, "engine", labelWorker, labelDPRank}

// vllmReasons are vLLM's finish reasons, whose series exist from the start
// (vLLM creates them eagerly, so rate() sees a 0 before the first abort).
var vllmReasons = [...]string{"stop", "length", "abort", "error"}

// maxExtraReasons bounds the series created for unrecognised finish reasons.
const maxExtraReasons = 16

func newVLLM(model string, cache Cache, role bool) *vllmFamily {
	vllmLabels := vllmLabels
	if role {
		vllmLabels = withLabels(vllmLabels, labelRole)
	}
	gauge := func(name, help string, extra ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, withLabels(vllmLabels, extra...))
	}
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, withLabels(vllmLabels, extra...))
	}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, vllmLabels)
	}
	tokens := buckets125(cache.maxModelLen())
	return &vllmFamily{
		model: validUTF8(model),
		cache: cache,
		role:  role,

		running:   gauge("vllm:num_requests_running", "Requests in the rank's running batch."),
		waiting:   gauge("vllm:num_requests_waiting", "Requests queued on the rank, waiting to be scheduled."),
		kvUsage:   gauge("vllm:kv_cache_usage_perc", "Fraction of the rank's KV-cache blocks in use (1 means full)."),
		cacheInfo: gauge("vllm:cache_config_info", "KV-cache configuration of the rank; the value is always 1.", "block_size", "cache_dtype", "num_gpu_blocks", "num_cpu_blocks"),

		prefixQueries: counter("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache."),
		prefixHits:    counter("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache."),
		preemptions:   counter("vllm:num_preemptions_total", "Requests preempted by the rank's scheduler."),
		promptTokens:  counter("vllm:prompt_tokens_total", "Prompt tokens of finished requests."),
		genTokens:     counter("vllm:generation_tokens_total", "Tokens generated."),
		success:       counter("vllm:request_success_total", "Requests finished, by finish reason.", "finished_reason"),

		specDrafts:      counter("vllm:spec_decode_num_drafts_total", "Speculative proposals: one per request per decode forward."),
		specDraftTokens: counter("vllm:spec_decode_num_draft_tokens_total", "Draft tokens proposed."),
		specAccepted:    counter("vllm:spec_decode_num_accepted_tokens_total", "Draft tokens accepted by verification."),

		ttft:    hist("vllm:time_to_first_token_seconds", "Time from arrival to the first token, in seconds.", vllmTTFTBuckets),
		itl:     hist("vllm:inter_token_latency_seconds", "Time between consecutive tokens of a request, in seconds.", vllmTokenLatencyBuckets),
		tpot:    hist("vllm:time_per_output_token_seconds", "Deprecated alias of vllm:inter_token_latency_seconds.", vllmTokenLatencyBuckets),
		reqTPOT: hist("vllm:request_time_per_output_token_seconds", "Mean time per output token after the first, per request, in seconds.", vllmTokenLatencyBuckets),

		e2e:       hist("vllm:e2e_request_latency_seconds", "Time from arrival to the last token, in seconds.", vllmRequestLatencyBuckets),
		queue:     hist("vllm:request_queue_time_seconds", "Time a request waited before it was first scheduled, in seconds.", vllmRequestLatencyBuckets),
		prefill:   hist("vllm:request_prefill_time_seconds", "Time from first scheduling to the first token, in seconds.", vllmRequestLatencyBuckets),
		decode:    hist("vllm:request_decode_time_seconds", "Time from the first to the last token, in seconds.", vllmRequestLatencyBuckets),
		inference: hist("vllm:request_inference_time_seconds", "Time a request spent running (prefill and decode), in seconds.", vllmRequestLatencyBuckets),

		promptHist: hist("vllm:request_prompt_tokens", "Prompt tokens per finished request.", tokens),
		genHist:    hist("vllm:request_generation_tokens", "Generated tokens per finished request.", tokens),
		maxGenHist: hist("vllm:request_max_num_generation_tokens", "Most tokens generated by any choice of a request (n = 1, so its generated tokens).", tokens),
		maxTok:     hist("vllm:request_params_max_tokens", "The max_tokens parameter of finished requests that set it.", tokens),
	}
}

func (f *vllmFamily) vecs() []*prometheus.MetricVec {
	return []*prometheus.MetricVec{
		f.running.MetricVec, f.waiting.MetricVec, f.kvUsage.MetricVec, f.cacheInfo.MetricVec,
		f.prefixQueries.MetricVec, f.prefixHits.MetricVec, f.preemptions.MetricVec,
		f.promptTokens.MetricVec, f.genTokens.MetricVec, f.success.MetricVec,
		f.specDrafts.MetricVec, f.specDraftTokens.MetricVec, f.specAccepted.MetricVec,
		f.ttft.MetricVec, f.itl.MetricVec, f.tpot.MetricVec, f.reqTPOT.MetricVec,
		f.e2e.MetricVec, f.queue.MetricVec, f.prefill.MetricVec, f.decode.MetricVec, f.inference.MetricVec,
		f.promptHist.MetricVec, f.genHist.MetricVec, f.maxGenHist.MetricVec, f.maxTok.MetricVec,
	}
}

// vllmRank holds one rank's children.
type vllmRank struct {
	f      *vllmFamily
	labels []string // model_name, engine, worker, dp_rank

	running, waiting, kvUsage prometheus.Gauge

	prefixQueries, prefixHits, preemptions, promptTokens, genTokens prometheus.Counter
	success                                                         map[string]prometheus.Counter
	// spec holds the speculative-decoding counters, bound on first use.
	spec *[3]prometheus.Counter

	ttft, itl, tpot, reqTPOT, e2e, queue, prefill, decode, inference prometheus.Observer
	promptHist, genHist, maxGenHist, maxTok                          prometheus.Observer
}

func (f *vllmFamily) bind(worker, rank, role string) observer {
	l := []string{f.model, rank, worker, rank}
	if f.role {
		l = append(l, role)
	}
	r := &vllmRank{
		f: f, labels: l,
		running: f.running.WithLabelValues(l...), waiting: f.waiting.WithLabelValues(l...), kvUsage: f.kvUsage.WithLabelValues(l...),
		prefixQueries: f.prefixQueries.WithLabelValues(l...), prefixHits: f.prefixHits.WithLabelValues(l...),
		preemptions: f.preemptions.WithLabelValues(l...), promptTokens: f.promptTokens.WithLabelValues(l...),
		genTokens: f.genTokens.WithLabelValues(l...),
		success:   make(map[string]prometheus.Counter, len(vllmReasons)),
		ttft:      f.ttft.WithLabelValues(l...), itl: f.itl.WithLabelValues(l...), tpot: f.tpot.WithLabelValues(l...),
		reqTPOT: f.reqTPOT.WithLabelValues(l...), e2e: f.e2e.WithLabelValues(l...), queue: f.queue.WithLabelValues(l...),
		prefill: f.prefill.WithLabelValues(l...), decode: f.decode.WithLabelValues(l...), inference: f.inference.WithLabelValues(l...),
		promptHist: f.promptHist.WithLabelValues(l...), genHist: f.genHist.WithLabelValues(l...),
		maxGenHist: f.maxGenHist.WithLabelValues(l...), maxTok: f.maxTok.WithLabelValues(l...),
	}
	for _, reason := range vllmReasons {
		r.success[reason] = f.success.WithLabelValues(withLabels(l, reason)...)
	}
	f.cacheInfo.WithLabelValues(withLabels(l,
		strconv.Itoa(f.cache.BlockSize), "auto",
		strconv.Itoa(f.cache.GPUBlocksPerRank), strconv.Itoa(f.cache.CPUBlocksPerRank))...).Set(1)
	return r
}

func (r *vllmRank) setLoad(running, waiting, kvUsage float64) {
	r.running.Set(running)
	r.waiting.Set(waiting)
	r.kvUsage.Set(kvUsage)
}

func (r *vllmRank) preempted(n float64) { r.preemptions.Add(n) }

func (r *vllmRank) prefixQuery(queried, hit float64) {
	r.prefixQueries.Add(queried)
	r.prefixHits.Add(hit)
}

func (r *vllmRank) firstToken(ttft, queue, prefill float64) {
	observe(r.ttft, ttft)
	observe(r.queue, queue)
	observe(r.prefill, prefill)
	r.genTokens.Inc()
}

func (r *vllmRank) token(gap float64) {
	observe(r.itl, gap)
	observe(r.tpot, gap)
	r.genTokens.Inc()
}

func (r *vllmRank) finished(q Request) {
	r.reason(q.Reason).Inc()
	r.promptTokens.Add(float64(q.Prompt))
	observe(r.e2e, q.E2E)
	observe(r.decode, q.Decode)
	observe(r.inference, q.Inference)
	if q.Generated > 1 {
		observe(r.reqTPOT, q.Decode/float64(q.Generated-1))
	}
	r.promptHist.Observe(float64(q.Prompt))
	r.genHist.Observe(float64(q.Generated))
	r.maxGenHist.Observe(float64(q.Generated))
	if q.MaxTokens > 0 {
		r.maxTok.Observe(float64(q.MaxTokens))
	}
}

func (r *vllmRank) specDecode(drafts, draftTokens, accepted float64) {
	if r.spec == nil {
		f, l := r.f, r.labels
		r.spec = &[3]prometheus.Counter{f.specDrafts.WithLabelValues(l...), f.specDraftTokens.WithLabelValues(l...), f.specAccepted.WithLabelValues(l...)}
	}
	r.spec[0].Add(drafts)
	r.spec[1].Add(draftTokens)
	r.spec[2].Add(accepted)
}

// reason returns the success counter of a finish reason, creating series for
// unrecognised ones up to maxExtraReasons, beyond which (and for invalid
// UTF-8, which client_golang rejects) they count as "error".
func (r *vllmRank) reason(s string) prometheus.Counter {
	if c, ok := r.success[s]; ok {
		return c
	}
	if len(r.success) >= len(vllmReasons)+maxExtraReasons || !utf8.ValidString(s) {
		return r.success["error"]
	}
	c := r.f.success.WithLabelValues(withLabels(r.labels, s)...)
	r.success[s] = c
	return c
}
