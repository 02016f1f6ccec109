// Package metrics exports the engine-native Prometheus metrics of dynosim's
// live mode.
//
// The driver goroutine that steps the simulated workers reports what happened
// (queue lengths, first tokens, generated tokens, finished requests, …) and
// this package turns those reports into the metric families a real engine
// would expose, so that routers, autoscalers and dashboards written against
// vLLM or SGLang work unchanged against the simulator. Names, label names and
// histogram bucket bounds follow the engines themselves (vLLM's
// vllm/v1/metrics/loggers.py, SGLang's sglang/srt/metrics/collector.py) and
// the mock servers of the ecosystem (llm-d-inference-sim, Dynamo's mocker).
//
// Only the chosen backend's family is registered; see [Backend] for the
// mapping and the per-family files (vllm.go, sglang.go) for every name.
//
// # Labels
//
// Every series is per data-parallel rank of a worker. A real engine is one
// process per worker, so Prometheus tells workers apart by the scrape target
// (the instance label); dynosim serves all workers from one /metrics
// endpoint, so every series also carries worker="<global worker index>".
// dp_rank="<rank>" is present in both families so cross-backend queries can
// say sum by (worker, dp_rank).
//
// # Input hygiene
//
// Observation methods never panic. Counts that are zero or negative are
// ignored (client_golang panics on a negative counter increment). Durations
// that are NaN or infinite are dropped, negative durations are clamped to 0
// (they only arise from clock rounding in the simulator). Gauges are clamped:
// request counts to ≥ 0, KV usage to [0, 1], NaN to 0. Negative worker or rank
// indices, or ones beyond [MaxWorkers] / [MaxRanks], are ignored.
//
// # Concurrency
//
// Methods are meant to be called from the single driver goroutine, but they
// are serialised by a mutex (uncontended, so cheap) so that ForgetWorker or
// MustRegister from another goroutine is safe. Scrapes run concurrently;
// client_golang's metrics are atomic. The label-bound children of each
// (worker, rank) are created on first use and cached, so steady-state calls
// do not allocate (see BenchmarkToken).
package metrics

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Backend selects which engine's metric family is exported.
type Backend uint8

// The supported backends.
const (
	// BackendVLLM exports the vllm:* family.
	BackendVLLM Backend = iota + 1
	// BackendSGLang exports the sglang:* family.
	BackendSGLang
	// BackendTRTLLM also exports the vllm:* family. Real trtllm-serve has
	// its own trtllm_* family, but the mocks dynosim mirrors do not emulate
	// it (llm-d-inference-sim speaks vLLM only; Dynamo's mocker has native
	// vllm:* and sglang:* families), so tools tested against them read
	// vllm:* names whatever the engine. Emitting those keeps such tools
	// working for simulated TensorRT-LLM workers; a trtllm_* family can be
	// added when something needs it.
	BackendTRTLLM
)

// String returns the backend's canonical name ("vllm", "sglang", "trtllm").
func (b Backend) String() string {
	switch b {
	case BackendVLLM:
		return "vllm"
	case BackendSGLang:
		return "sglang"
	case BackendTRTLLM:
		return "trtllm"
	}
	return "Backend(" + strconv.Itoa(int(b)) + ")"
}

// ParseBackend parses an engine name as given on the command line. It
// accepts "vllm", "sglang" and "trtllm" (also "tensorrt-llm", "tensorrt_llm",
// "trt-llm"), case-insensitively. Validate flags with it before calling New,
// which panics on an unknown name.
func ParseBackend(s string) (Backend, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "vllm":
		return BackendVLLM, nil
	case "sglang":
		return BackendSGLang, nil
	case "trtllm", "trt-llm", "tensorrt-llm", "tensorrt_llm":
		return BackendTRTLLM, nil
	}
	return 0, fmt.Errorf("metrics: unknown backend %q (want vllm, sglang or trtllm)", s)
}

// Cache describes a rank's KV cache. It feeds vllm:cache_config_info and
// sglang:max_total_num_tokens, and bounds the token-count histograms.
type Cache struct {
	BlockSize        int // tokens per KV block
	GPUBlocksPerRank int // device KV blocks of one data-parallel rank
	CPUBlocksPerRank int // host (offload) KV blocks of one rank; 0 if none
	// MaxModelLen is the context length. vLLM derives the 1-2-5 bucket
	// bounds of its token-count histograms from it. If it is 0 the rank's
	// KV capacity (BlockSize × GPUBlocksPerRank) is used, since a real
	// engine refuses a context longer than it can cache, and failing that
	// defaultMaxModelLen.
	MaxModelLen int
}

// defaultMaxModelLen bounds token-count buckets when Cache says nothing.
const defaultMaxModelLen = 131072

func (c Cache) maxModelLen() int {
	switch {
	case c.MaxModelLen > 0:
		return c.MaxModelLen
	case c.BlockSize > 0 && c.GPUBlocksPerRank > 0:
		return c.BlockSize * c.GPUBlocksPerRank
	}
	return defaultMaxModelLen
}

// Request is what the driver knows about a request when it finishes.
type Request struct {
	Prompt    int     // prompt tokens
	Generated int     // generated tokens
	MaxTokens int     // the request's max_tokens parameter; 0 if unset
	E2E       float64 // seconds from arrival to the last token
	Decode    float64 // seconds from the first to the last token
	Inference float64 // seconds running (prefill + decode), excluding queueing
	// Reason is the finish reason: "stop", "length", "abort" or "error".
	// Other non-empty values are recorded verbatim; an empty one as "error",
	// because it means the caller did not say why the request ended.
	Reason string
}

// Limits on indices: observations beyond them are ignored rather than
// growing the per-rank cache without bound on a corrupt index.
const (
	MaxWorkers = 1 << 16
	MaxRanks   = 1 << 12
)

// Metrics holds the registry and the cached per-rank children. A nil
// *Metrics ignores every observation, so live mode can run without metrics.
type Metrics struct {
	backend Backend
	reg     *prometheus.Registry
	fam     family

	handlerOnce sync.Once
	handler     http.Handler

	mu      sync.Mutex
	workers [][]observer // [worker][rank], nil until first use
	role    func(worker int) string
}

// Init creates the series of a worker's ranks now, at zero, rather than at
// their first observation: a scraper, router or autoscaler sees every
// worker and DP rank from start-up (issue 31 item 3), as a vLLM engine
// exports its gauges before its first request.
func (m *Metrics) Init(worker, ranks int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	for r := range ranks {
		m.at(worker, r)
	}
	m.mu.Unlock()
}

// family is one engine's set of metric vectors.
type family interface {
	// bind returns the children for one rank, creating its series; role
	// is the worker's pool role (used when the family has the label).
	bind(worker, rank, role string) observer
	// vecs lists every vector, for registration and ForgetWorker.
	vecs() []*prometheus.MetricVec
}

// observer receives a rank's sanitised observations.
type observer interface {
	setLoad(running, waiting, kvUsage float64)
	preempted(n float64)
	prefixQuery(queried, hit float64)
	firstToken(ttft, queue, prefill float64)
	token(gap float64)
	finished(r Request)
	specDecode(drafts, draftTokens, accepted float64)
}

// New returns the metrics of one dynosim live deployment serving model with
// the given backend ("vllm", "sglang" or "trtllm"; see ParseBackend). It
// registers the backend's family plus the standard Go runtime and process
// collectors. It panics on an unknown backend, a programming error since
// flags should have been validated with ParseBackend.
func New(backend string, model string, cache Cache) *Metrics {
	return NewWithRoles(backend, model, cache, nil)
}

// NewWithRoles is New for a deployment whose workers have pool roles (a
// disaggregated one): every series also carries worker_type="<role of the
// worker>" (role(worker): "prefill" or "decode"), the label Dynamo's
// per-worker metrics name the role with (dynamo_frontend_worker_*). A nil
// role is New.
func NewWithRoles(backend string, model string, cache Cache, role func(worker int) string) *Metrics {
	b, err := ParseBackend(backend)
	if err != nil {
		panic(err)
	}
	m := &Metrics{backend: b, reg: prometheus.NewRegistry(), role: role}
	switch b {
	case BackendSGLang:
		m.fam = newSGLang(model, cache, role != nil)
	default:
		m.fam = newVLLM(model, cache, role != nil)
	}
	for _, v := range m.fam.vecs() {
		m.reg.MustRegister(v) // a MetricVec collects what its typed vector holds
	}
	// Every exporter serves these; dashboards expect them next to the
	// engine's own metrics, and they cost one collection per scrape.
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Backend returns the backend whose family is exported.
func (m *Metrics) Backend() Backend { return m.backend }

// Registry returns the registry holding every exported collector.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// MustRegister adds collectors (e.g. KV-event counters from another package)
// to the registry. It panics, as prometheus.Registry.MustRegister does, if
// one is invalid or collides with an existing metric.
func (m *Metrics) MustRegister(cs ...prometheus.Collector) {
	m.reg.MustRegister(cs...)
}

// Handler returns the /metrics handler for the registry. It continues on
// collection errors, so one broken extra collector does not blank the whole
// scrape, and it instruments itself with promhttp_metric_handler_* metrics
// as the default Prometheus handler does.
func (m *Metrics) Handler() http.Handler {
	m.handlerOnce.Do(func() {
		h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
			ErrorHandling: promhttp.ContinueOnError,
			Registry:      m.reg,
		})
		m.handler = promhttp.InstrumentMetricHandler(m.reg, h)
	})
	return m.handler
}

// SetLoad sets a rank's scheduler gauges after a pass: requests running,
// requests waiting, and the fraction of device KV blocks in use.
func (m *Metrics) SetLoad(worker, rank, running, waiting int, kvUsage float64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	if o := m.at(worker, rank); o != nil {
		o.setLoad(float64(max(running, 0)), float64(max(waiting, 0)), fraction(kvUsage))
	}
	m.mu.Unlock()
}

// Preempted counts n requests preempted (SGLang: retracted) on a rank.
func (m *Metrics) Preempted(worker, rank, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.mu.Lock()
	if o := m.at(worker, rank); o != nil {
		o.preempted(float64(n))
	}
	m.mu.Unlock()
}

// SpecDecode counts a rank's speculative decoding since its last call
// (issue 30 item 4): drafts proposals (one per request per decode
// forward), draftTokens tokens proposed in them and accepted of those.
// Accepted is clamped to [0, draftTokens]; a call without drafts is
// ignored, so a deployment without speculation exports no such series
// (vLLM registers them only with a speculative config).
func (m *Metrics) SpecDecode(worker, rank, drafts, draftTokens, accepted int) {
	if m == nil || drafts <= 0 || draftTokens <= 0 {
		return
	}
	accepted = min(max(accepted, 0), draftTokens)
	m.mu.Lock()
	if o := m.at(worker, rank); o != nil {
		o.specDecode(float64(drafts), float64(draftTokens), float64(accepted))
	}
	m.mu.Unlock()
}

// PrefixQuery records a prefix-cache lookup on a rank, in tokens as vLLM
// counts them: queried tokens looked up, hit of them found cached. A hit
// above queried is clamped to queried; negative values are ignored.
func (m *Metrics) PrefixQuery(worker, rank, queried, hit int) {
	if m == nil || queried < 0 || hit < 0 || (queried == 0 && hit == 0) {
		return
	}
	hit = min(hit, queried)
	m.mu.Lock()
	if o := m.at(worker, rank); o != nil {
		o.prefixQuery(float64(queried), float64(hit))
	}
	m.mu.Unlock()
}

// FirstToken records a request's first token on a rank: ttft from arrival,
// queue from arrival to first admission, prefill from admission to the first
// token; all in seconds. The first token also counts as a generated token.
func (m *Metrics) FirstToken(worker, rank int, ttft, queue, prefill float64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	if o := m.at(worker, rank); o != nil {
		o.firstToken(seconds(ttft), seconds(queue), seconds(prefill))
	}
	m.mu.Unlock()
}

// Token records one generated token after the first, gap seconds after the
// previous one of the same request.
func (m *Metrics) Token(worker, rank int, gap float64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	if o := m.at(worker, rank); o != nil {
		o.token(seconds(gap))
	}
	m.mu.Unlock()
}

// Finished records a request that left a rank, whatever the reason.
func (m *Metrics) Finished(worker, rank int, r Request) {
	if m == nil {
		return
	}
	r.Prompt, r.Generated, r.MaxTokens = max(r.Prompt, 0), max(r.Generated, 0), max(r.MaxTokens, 0)
	r.E2E, r.Decode, r.Inference = seconds(r.E2E), seconds(r.Decode), seconds(r.Inference)
	if r.Reason == "" {
		r.Reason = "error"
	}
	m.mu.Lock()
	if o := m.at(worker, rank); o != nil {
		o.finished(r)
	}
	m.mu.Unlock()
}

// ForgetWorker deletes every series of a worker, for a worker the planner
// removed. Later observations for the index recreate its series from zero,
// which Prometheus's rate() treats as a counter reset.
func (m *Metrics) ForgetWorker(worker int) {
	if m == nil || worker < 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if worker < len(m.workers) {
		m.workers[worker] = nil
	}
	match := prometheus.Labels{labelWorker: strconv.Itoa(worker)}
	for _, v := range m.fam.vecs() {
		v.DeletePartialMatch(match)
	}
}

// at returns the observer of (worker, rank), binding it on first use, or nil
// if an index is out of range. m.mu must be held.
func (m *Metrics) at(worker, rank int) observer {
	if worker < 0 || worker >= MaxWorkers || rank < 0 || rank >= MaxRanks {
		return nil
	}
	if worker < len(m.workers) && rank < len(m.workers[worker]) {
		if o := m.workers[worker][rank]; o != nil {
			return o
		}
	}
	if worker >= len(m.workers) {
		m.workers = append(m.workers, make([][]observer, worker+1-len(m.workers))...)
	}
	ranks := m.workers[worker]
	if rank >= len(ranks) {
		ranks = append(ranks, make([]observer, rank+1-len(ranks))...)
		m.workers[worker] = ranks
	}
	role := ""
	if m.role != nil {
		role = validUTF8(m.role(worker))
	}
	o := m.fam.bind(strconv.Itoa(worker), strconv.Itoa(rank), role)
	ranks[rank] = o
	return o
}

// seconds sanitises a duration: NaN and ±Inf become NaN (dropped by
// observe), negatives 0.
func seconds(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return math.NaN()
	}
	return max(x, 0)
}

// fraction clamps a ratio to [0, 1], NaN to 0.
func fraction(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return min(max(x, 0), 1)
}

// observe adds a sanitised duration to h unless it was dropped.
func observe(h prometheus.Observer, x float64) {
	if !math.IsNaN(x) {
		h.Observe(x)
	}
}

// Label names shared by both families.
const (
	labelModel  = "model_name"
	labelWorker = "worker"
	labelDPRank = "dp_rank"
	labelRole   = "worker_type"
)

// withLabels returns base followed by extra, in a new slice.
func withLabels(base []string, extra ...string) []string {
	return append(append(make([]string, 0, len(base)+len(extra)), base...), extra...)
}

// validUTF8 replaces invalid UTF-8, which client_golang rejects in label
// values with a panic.
func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
