// Package report collects per-request metrics during a replay and renders the
// report: the summary map of the reference (§8.8), per-worker counters, a
// bucketed time series for plots, and optional per-request records.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/metrics"
	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/timing"
)

// Report is the result of one prediction.
type Report struct {
	Summary       Summary           `json:"summary"`
	SLA           *SLAInfo          `json:"sla,omitempty"` // the bounds goodput used
	Verdict       *Verdict          `json:"verdict"`
	Deployment    *Deployment       `json:"deployment,omitempty"`
	Warnings      []string          `json:"warnings,omitempty"` // the run is valid but may mislead (a pool that cannot fit its GPU)
	Outcomes      Outcomes          `json:"outcomes"`
	Pools         []PoolStats       `json:"pools"`
	Workers       []WorkerStats     `json:"workers"`
	KVTransfer    *TransferStats    `json:"kv_transfer,omitempty"` // disaggregated runs
	KVTiers       []TierPool        `json:"kv_tiers,omitempty"`    // pools with KVBM lower tiers
	Engine        EngineStats       `json:"engine"`
	Distributions Distributions     `json:"distributions"`
	Planner       *PlannerReport    `json:"planner,omitempty"`          // planner runs
	TTFTBreakdown *BreakdownSection `json:"ttft_breakdown,omitempty"`   // absent when no request got a token
	Timeline      *Timeline         `json:"request_timeline,omitempty"` // the watched request (Inputs.Watch)
	TimeSeries    TimeSeries        `json:"timeseries"`
	Coverage      Coverage          `json:"coverage"`

	requests []RequestRecord
}

// Summary is the flat metric map (spec §8.8). A value that is undefined for
// the run (a rate over no simulated time, a latency of no request, a ratio
// of nothing) is NaN here and null in JSON, never 0 or a huge number.
type Summary map[string]float64

// MarshalJSON writes the keys sorted, NaN as null; ±Inf is an error.
func (s Summary) MarshalJSON() ([]byte, error) {
	keys := make([]string, 0, len(s))
	for k, v := range s {
		if math.IsInf(v, 0) {
			return nil, fmt.Errorf("report: summary %s is infinite", k)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, k)
		b = append(b, ':')
		if v := s[k]; math.IsNaN(v) {
			b = append(b, "null"...)
		} else {
			js, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			b = append(b, js...)
		}
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes: null is NaN.
func (s *Summary) UnmarshalJSON(b []byte) error {
	var m map[string]*float64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*s = make(Summary, len(m))
	for k, v := range m {
		if v == nil {
			(*s)[k] = math.NaN()
		} else {
			(*s)[k] = *v
		}
	}
	return nil
}

// Outcomes is schema.Outcomes: the section's shape lives in the schema.
type Outcomes = schema.Outcomes

// WorkerStats is schema.WorkerStats: the section's shape lives in the schema.
type WorkerStats = schema.WorkerStats

// EngineStats is schema.EngineStats: the section's shape lives in the schema.
type EngineStats = schema.EngineStats

// Distributions is schema.Distributions: the section's shape lives in the schema.
type Distributions = schema.Distributions

// Coverage is schema.Coverage: the section's shape lives in the schema.
type Coverage = schema.Coverage

// RequestRecord is one line of requests.jsonl. A value that does not
// exist for the request (no first token, no second token, never admitted,
// never placed, no terminal outcome) is null, never 0; e2e_latency_ms
// needs a last token, so a completed zero-output request has none.
type RequestRecord struct {
	UUID                  uint64     `json:"uuid"`
	ArrivalTimeMs         float64    `json:"arrival_time_ms"`
	FirstAdmitMs          *float64   `json:"first_admit_ms"`
	FirstTokenMs          *float64   `json:"first_token_ms"`
	LastTokenMs           *float64   `json:"last_token_ms"`
	TerminalTimeMs        *float64   `json:"terminal_time_ms"`
	TTFTMs                *float64   `json:"ttft_ms"`
	TTSTMs                *float64   `json:"ttst_ms"`
	ITLMs                 *float64   `json:"itl_ms"`
	E2ELatencyMs          *float64   `json:"e2e_latency_ms"`
	InputLength           int        `json:"input_length"`
	RequestedOutputLength int        `json:"requested_output_length"`
	OutputLength          int        `json:"output_length"`
	ReusedInputTokens     int        `json:"reused_input_tokens"`
	Worker                *int       `json:"worker"`
	DPRank                *int       `json:"dp_rank"`
	TerminalStatus        string     `json:"terminal_status"`
	RejectionReason       *string    `json:"rejection_reason"`
	RouterOverlapTokens   *int       `json:"router_overlap_tokens"` // the router's estimate at placement; null if it makes none
	RouterQueueMs         *float64   `json:"router_queue_ms"`       // held by the router before placement
	TTFTBreakdownMs       *Breakdown `json:"ttft_breakdown_ms"`     // its TTFT cut into parts (breakdown.go); null without a first token
	Warmup                bool       `json:"warmup,omitempty"`      // traffic.warmup: left out of the report's figures

	// Disaggregated runs only (absent otherwise): worker and dp_rank are
	// the decode side's.
	PrefillWorker           *int     `json:"prefill_worker,omitempty"`
	PrefillDPRank           *int     `json:"prefill_dp_rank,omitempty"`
	DecodeReusedInputTokens *int     `json:"decode_reused_input_tokens,omitempty"`
	KVTransferTokens        *int     `json:"kv_transfer_tokens,omitempty"`
	KVTransferBytes         *float64 `json:"kv_transfer_bytes,omitempty"`
	KVTransferStartMs       *float64 `json:"kv_transfer_start_ms,omitempty"`
	KVTransferMs            *float64 `json:"kv_transfer_ms,omitempty"`
}

// SLA bounds for goodput; zero fields are unset.
type SLA struct{ TTFTMs, ITLMs, E2EMs float64 }

// RunInfo is what the driver knows beyond the per-request records.
type RunInfo struct {
	Workers    []WorkerStats // pool by pool, then the planner's in the order it added them
	Planner    *PlannerReport
	Pools      []PoolInfo
	Transfer   *TransferInfo // disaggregated runs
	ClockEnd   timing.Time   // virtual time when the replay stopped
	SLA        SLA
	StopReason string // drained | max_virtual_time
}

// Build renders the report.
func Build(c *Collector, info RunInfo) *Report {
	r := &Report{Workers: info.Workers, Coverage: Coverage{CapturePerRequest: c.capture}, SLA: info.SLA.info()}
	r.Outcomes = Outcomes{RejectedBy: map[string]int{}, StopReason: info.StopReason}
	t := tally{width: c.Series.width}
	for i := range c.recs {
		q := &c.recs[i]
		if c.capture {
			r.requests = append(r.requests, c.record(q, uint64(i+1)))
		}
		if c.warm(c.base+uint64(i+1), q) {
			r.Coverage.WarmupExcluded++
			if c.capture {
				r.requests[len(r.requests)-1].Warmup = true
			}
			continue
		}
		switch q.status {
		case Rejected:
			r.Outcomes.Rejected++
			r.Outcomes.RejectedBy[c.reasons[q.reason]]++
		case Pending:
			r.Outcomes.Unfinished++
		default:
			t.add(q, c.Frontend, info.SLA)
		}
	}
	r.Coverage.PerRequestRecords = len(r.requests)
	r.Outcomes.Completed = t.completed
	runS := t.duration.Ms() / 1000
	if c.Warmup.on() {
		from := c.measuredFrom(t.duration)
		end := from.Ms()
		r.Coverage.WarmupEndMs = &end
		t.duration = max(t.duration-from, 0)
	}
	durS := t.duration.Ms() / 1000
	if durS <= 0 {
		durS = math.NaN() // no simulated time: rates are undefined
	}
	s := t.summary(len(c.recs)-r.Coverage.WarmupExcluded, r.Outcomes, durS)
	buildPools(r, info, s)
	if info.Planner != nil {
		p := info.Planner.finished()
		p.GPUHours = s[schema.GPUHours]
		mean := p.GPUHours * 3600 / runS // GPU hours cover the whole run, warm-up too
		p.MeanGPUs, s[schema.MeanGPUs] = nullable(mean), mean
		r.Planner = p
	}
	if info.Transfer != nil {
		r.KVTransfer = buildTransfer(c, info.Transfer, s)
	}
	s[schema.NumPreemptions] = float64(buildEngine(r, s))
	if info.SLA != (SLA{}) {
		s[schema.GoodputCompletedRequests] = float64(t.good)
		s[schema.GoodputRequestThroughputRPS] = float64(t.good) / durS
		s[schema.GoodputOutputThroughputTokS] = float64(t.goodTok) / durS
	}
	r.TimeSeries = c.Series.render()
	ts := &r.TimeSeries
	ts.TTFTP50Ms, ts.TTFTP99Ms = windowQuantiles(len(ts.TMs), t.ttftWin, t.ttft)
	ts.ITLP50Ms, ts.ITLP99Ms = windowQuantiles(len(ts.TMs), t.tpotWin, t.tpot)
	t.putDists(s, c)
	r.Summary = s

	qs := make([]float64, 101)
	for i := range qs {
		qs[i] = float64(i) / 100
	}
	r.Distributions = Distributions{
		TTFTMs: sortedQuantiles(t.ttft, qs),
		ITLMs:  c.itl.quantiles(c.itlStats.n, qs),
		E2EMs:  sortedQuantiles(t.e2e, qs),
	}
	r.TTFTBreakdown = c.breakdownSection(info.Transfer != nil)
	r.Verdict = buildVerdict(r)
	return r
}

// tally sums the completed requests' records for the summary.
type tally struct {
	completed, inTok, outTok, reused, firstReused int
	estimated, estimatedIn                        int
	queueMs                                       float64
	good, goodTok                                 int
	ttft, ttst, tpot, e2e, isl, osl               []float64
	duration                                      timing.Time
	// The time-series window each ttft and tpot sample's request arrived
	// in (the series' final width: the replay has ended).
	width            timing.Time
	ttftWin, tpotWin []int32
}

// add counts completed request q; frontend is the collector's Frontend.
func (t *tally) add(q *record, frontend timing.Time, sla SLA) {
	t.completed++
	t.queueMs += (q.placed - q.arrival - frontend).Ms()
	if q.overlap >= 0 {
		t.estimated += int(q.overlap)
		t.estimatedIn += int(q.input)
	}
	t.inTok += int(q.input)
	t.outTok += int(q.tokens)
	t.isl, t.osl = append(t.isl, float64(q.input)), append(t.osl, float64(q.tokens))
	t.duration = max(t.duration, q.term)
	if q.admitted {
		t.reused += int(q.reused)
		t.firstReused += int(q.firstReused)
	}
	if q.tokens == 0 {
		// No token: no latency samples (the e2e percentiles leave it
		// out, as the reference's collector does: "completed zero-output
		// requests ... add no latency samples", mocker.md §8.8), and only
		// an end-to-end bound can be met, by the terminal time ("token-less
		// completed requests are good only under an e2e-only SLA").
		if sla.E2EMs > 0 && sla.TTFTMs == 0 && sla.ITLMs == 0 && max(q.term-q.arrival, 0).Ms() <= sla.E2EMs {
			t.good++
		}
		return
	}
	tf := max(q.first-q.arrival, 0).Ms()
	el := max(q.last-q.arrival, 0).Ms()
	w := int32(max(q.arrival, 0) / t.width)
	t.ttft = append(t.ttft, tf)
	t.ttftWin = append(t.ttftWin, w)
	t.e2e = append(t.e2e, el)
	if q.tokens >= 2 {
		t.ttst = append(t.ttst, (q.second - q.first).Ms())
		t.tpot = append(t.tpot, (q.last-q.first).Ms()/float64(q.tokens-1))
		t.tpotWin = append(t.tpotWin, w)
	}
	if sla.good(tf, el, int(q.tokens)) {
		t.good++
		t.goodTok += int(q.tokens)
	}
}

// summary starts the summary map of n requests over durS simulated seconds
// with the totals and rates; the sections add their keys.
func (t *tally) summary(n int, o Outcomes, durS float64) Summary {
	return Summary{
		schema.NumRequests:               float64(n),
		schema.CompletedRequests:         float64(t.completed),
		schema.RejectedRequests:          float64(o.Rejected),
		schema.UnfinishedRequests:        float64(o.Unfinished),
		schema.TotalInputTokens:          float64(t.inTok),
		schema.TotalOutputTokens:         float64(t.outTok),
		schema.DurationMs:                t.duration.Ms(),
		schema.WallTimeMs:                0,
		schema.RequestThroughputRPS:      float64(t.completed) / durS,
		schema.InputThroughputTokS:       float64(t.inTok) / durS,
		schema.OutputThroughputTokS:      float64(t.outTok) / durS,
		schema.TotalThroughputTokS:       float64(t.inTok+t.outTok) / durS,
		schema.PrefillWorkerSeconds:      0,
		schema.PrefillGPUsPerWorker:      0,
		schema.GPUHours:                  0,
		schema.ProcessedTokens:           float64(t.inTok + t.outTok),
		schema.ProcessedTokensPerS:       0,
		schema.ProcessedOutputTokensPerS: 0,
		schema.PrefixCacheReusedRatio:    ratio(t.reused, t.inTok),
		schema.FirstAdmissionReusedRatio: ratio(t.firstReused, t.inTok),
		// The router's expected reuse, beside the reuse obtained above
		// (null for routers that estimate none), and its queue wait.
		schema.RouterEstimatedOverlapRatio: ratio(t.estimated, t.estimatedIn),
		schema.MeanRouterQueueMs:           t.queueMs / float64(t.completed),
	}
}

// putDists writes every distribution's statistics (the exact ones sort
// their samples, which the CDFs then read).
func (t *tally) putDists(s Summary, c *Collector) {
	put(s, schema.TTFT, exactDist(t.ttft))
	put(s, schema.TTST, exactDist(t.ttst))
	put(s, schema.TPOT, exactDist(t.tpot))
	put(s, schema.E2E, exactDist(t.e2e))
	put(s, schema.ITL, sketchDist(c.itlStats, &c.itl))
	put(s, schema.PerUser, sketchDist(c.puStats, &c.perUser))
	put(s, schema.InputLen, exactDist(t.isl))
	put(s, schema.OutputLen, exactDist(t.osl))
}

// buildEngine sums the workers' engine counters into the engine section
// (and SGLang's own cache-hit ratio into the summary s) and returns their
// preemptions.
func buildEngine(r *Report, s Summary) (preempt int) {
	hit, tot, acc, fwd := 0, 0, 0, 0
	for _, w := range r.Workers {
		preempt += w.Preemptions
		r.Engine.Retractions += w.Retractions
		hit, tot = hit+w.CacheHitTokens, tot+w.CacheTokens
		acc, fwd = acc+w.AcceptedTokens, fwd+w.DecodeForwards
	}
	// The engine section keeps 0 for "none" (no SGLang prefill, no decode).
	if tot > 0 {
		r.Engine.CacheHitRatio = ratio(hit, tot)
		// Only SGLang prefills count these: other runs write no key, as
		// runs without an SLA write no goodput (issue 30 item 6).
		s[schema.SGLangCacheHitRatio] = r.Engine.CacheHitRatio
	}
	if fwd > 0 {
		r.Engine.MeanAcceptLength = ratio(acc, fwd)
	}
	return preempt
}

func (sla SLA) good(ttft, e2e float64, tokens int) bool {
	if sla.E2EMs > 0 && e2e > sla.E2EMs {
		return false
	}
	if sla.TTFTMs > 0 && ttft > sla.TTFTMs {
		return false
	}
	if sla.ITLMs > 0 && tokens > 1 && (e2e-ttft)/float64(tokens-1) > sla.ITLMs {
		return false
	}
	return true
}

// sortedQuantiles reads quantiles of already sorted samples (exactDist sorted them).
func sortedQuantiles(xs []float64, qs []float64) []float64 {
	out := make([]float64, len(qs))
	if len(xs) == 0 {
		return out
	}
	for i, q := range qs {
		out[i] = xs[int(math.Round(float64(len(xs)-1)*q))]
	}
	return out
}

// ratio is a/b, or NaN (null in the summary) when b is 0.
func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// put writes a distribution's statistics; all are undefined (NaN) with no
// samples.
func put(s Summary, f schema.Family, d dist) {
	if d.n == 0 {
		nan := math.NaN()
		d = dist{mean: nan, min: nan, max: nan, std: nan, pct: [5]float64{nan, nan, nan, nan, nan}}
	}
	s[f.Key(schema.Mean)] = d.mean
	s[f.Key(schema.Min)] = d.min
	s[f.Key(schema.Max)] = d.max
	s[f.Key(schema.Std)] = d.std
	s[f.Key(schema.Median)] = d.pct[0]
	s[f.Key(schema.P75)] = d.pct[1]
	s[f.Key(schema.P90)] = d.pct[2]
	s[f.Key(schema.P95)] = d.pct[3]
	s[f.Key(schema.P99)] = d.pct[4]
}

func (c *Collector) record(q *record, id uint64) RequestRecord {
	rr := RequestRecord{
		UUID: id, ArrivalTimeMs: q.arrival.Ms(), InputLength: int(q.input),
		RequestedOutputLength: int(q.requested), OutputLength: int(q.tokens),
		ReusedInputTokens: int(q.reused),
		TerminalStatus:    [...]string{"unfinished", "completed", "rejected"}[q.status],
	}
	ms := func(t timing.Time) *float64 { v := t.Ms(); return &v }
	if q.status == Rejected {
		rr.RejectionReason = &c.reasons[q.reason]
	}
	if q.worker >= 0 {
		w, r := int(q.worker), int(q.rank)
		rr.Worker, rr.DPRank = &w, &r
		rr.RouterQueueMs = ms(q.placed - q.arrival - c.Frontend)
		if q.overlap >= 0 {
			o := int(q.overlap)
			rr.RouterOverlapTokens = &o
		}
	}
	if q.admitted {
		rr.FirstAdmitMs = ms(q.firstAdmit)
	}
	if q.status != Pending {
		rr.TerminalTimeMs = ms(q.term)
	}
	if q.tokens > 0 {
		rr.FirstTokenMs, rr.LastTokenMs = ms(q.first), ms(q.last)
		rr.TTFTMs = ms(max(q.first-q.arrival, 0))
		rr.TTFTBreakdownMs = c.breakdown(id)
		rr.E2ELatencyMs = ms(max(q.last-q.arrival, 0))
	}
	// A completed request with no output token has no e2e latency either:
	// the reference's e2e is last token − arrival, not terminal time
	// (../shared/spec/mocker.md §8.8 and §12.2 quirk 10; Dynamo's replay/collector.rs), so its
	// record writes null for first_token_ms, ttft_ms and e2e_latency_ms.
	// Goodput still judges it by terminal time − arrival (tally.add).
	if q.tokens > 1 {
		rr.TTSTMs = ms(q.second - q.first)
		itl := (q.last - q.first).Ms() / float64(q.tokens-1)
		rr.ITLMs = &itl
	}
	q.x.record(&rr)
	return rr
}

// WallClockKeys are the summary keys that depend on the machine, not the inputs.
var WallClockKeys = schema.WallClockKeys

// SetWallTime records the simulator's wall-clock time (measured by the front
// end; the core never reads the clock) and the rates derived from it.
func (r *Report) SetWallTime(ms float64) {
	r.Summary[schema.WallTimeMs] = ms
	if ms > 0 {
		r.Summary[schema.ProcessedTokensPerS] = r.Summary[schema.ProcessedTokens] / (ms / 1000)
		r.Summary[schema.ProcessedOutputTokensPerS] = r.Summary[schema.TotalOutputTokens] / (ms / 1000)
	}
}

// JSON renders the report deterministically: struct fields in declaration
// order, map keys sorted, shortest round-trip floats.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return append(b, '\n'), nil
}

// RequestsJSONL renders the per-request records (empty unless captured).
func (r *Report) RequestsJSONL() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range r.requests {
		_ = enc.Encode(&r.requests[i]) // plain structs of numbers cannot fail
	}
	return b.Bytes()
}

// Table renders the AIPerf-style console table (spec §8.8; the rows and
// columns of metrics.Build, which the page shows too), then the outcome,
// duration and reuse lines; the verdict's line comes first (the answer
// before the ledger).
func (r *Report) Table() string {
	s := r.Summary
	var b strings.Builder
	if r.Verdict != nil {
		b.WriteString("Verdict: " + r.Verdict.Text + "\n")
	}
	b.WriteString(metrics.Build(s).Text())
	fmt.Fprintf(&b, "Completed / Rejected / Unfinished: %s / %s / %s   Preemptions: %s   Stop: %s\n",
		num(s[schema.CompletedRequests]), num(s[schema.RejectedRequests]), num(s[schema.UnfinishedRequests]), num(s[schema.NumPreemptions]), r.Outcomes.StopReason)
	if len(r.Outcomes.RejectedBy) > 0 {
		reasons := make([]string, 0, len(r.Outcomes.RejectedBy))
		for k, n := range r.Outcomes.RejectedBy {
			reasons = append(reasons, fmt.Sprintf("%s %d", k, n))
		}
		slices.Sort(reasons)
		fmt.Fprintf(&b, "Rejected by reason: %s\n", strings.Join(reasons, ", "))
	}
	fmt.Fprintf(&b, "GPUs: %s   Simulated duration: %s   Output throughput per GPU (tokens/sec): %s\n",
		num(s[schema.TotalGPUs]), metrics.Duration(s[schema.DurationMs]), num(s[schema.OutputThroughputTokS]/s[schema.TotalGPUs]))
	fmt.Fprintf(&b, "Prefix cache reused ratio: %s   First-admission reused ratio: %s\n",
		ratio4(s[schema.PrefixCacheReusedRatio]), ratio4(s[schema.FirstAdmissionReusedRatio]))
	r.tablePools(&b)
	r.tablePlanner(&b)
	r.tableBreakdown(&b)
	r.tableTiers(&b)
	fmt.Fprintf(&b, "Simulator wall time (ms): %s\n", num(s[schema.WallTimeMs]))
	r.tableTimeline(&b)
	return b.String()
}

func ratio4(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

// num formats a table value (metrics.Format).
func num(v float64) string { return metrics.Format(v) }

// Requests returns the captured per-request records, in arrival order.
func (r *Report) Requests() []RequestRecord { return r.requests }
