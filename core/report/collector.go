package report

import (
	"math"
	"slices"

	"github.com/dynosim/dynosim-web/internal/detmath"

	"github.com/dynosim/dynosim-web/timing"
)

// Status is a request's terminal outcome.
type Status uint8

const (
	Pending Status = iota
	Completed
	Rejected
)

// record is the fixed-size metric record of one request.
type record struct {
	arrival, firstAdmit       timing.Time
	first, second, last, term timing.Time
	tokens                    int32
	input, requested          int32
	reused, firstReused       int32
	worker, rank              int32 // -1 until placed
	placed                    timing.Time
	overlap                   int32 // the router's estimate of cached prompt tokens; -1: none
	status                    Status
	reason                    uint8 // Rejected: index into Collector.reasons
	admitted                  bool
	gaps                      []timing.Time // ITL gaps until the request ends
	x                         xfer          // disaggregated serving (disagg.go)
	// For the TTFT breakdown (breakdown.go): the start of the pass of the
	// last admission before the first token, of the first token's pass,
	// and (disaggregated) the end of the prefill.
	lastAdmit, firstPass, prefillEnd timing.Time
}

// Collector records the lifecycle of every request of a replay (spec §8.8).
// It only observes: the loop mints request ids, dense from 1, and reports
// each step of a request's life.
type Collector struct {
	recs     []record
	itl      sketch
	perUser  sketch
	itlStats moments
	puStats  moments
	Series   *Series
	capture  bool
	done     int
	reasons  []string        // rejection reasons seen, in first-seen order
	spare    [][]timing.Time // gap buffers of finished requests, for reuse
	// Frontend is the latency between a request's arrival and its
	// reaching the router (Options.Frontend): not router queueing.
	Frontend timing.Time
	// Onboarding: the run has KVBM lower tiers, so the TTFT breakdown has
	// an onboarding part; parks holds when each request first parked to
	// onboard, before its first admission (-1: never). Apart from the
	// records, which other runs keep at their size.
	Onboarding bool
	parks      []timing.Time
	watch      uint64 // the request whose life the timeline records (0: none)
	timeline   []TimelineEvent
	base       uint64 // requests forgotten (Forget): recs[0] is request base+1
	// Warmup marks the requests the figures leave out (warmup.go).
	Warmup Warmup
}

// NewCollector returns a collector for up to n requests over workers
// workers. capture keeps per-request records for RequestsJSONL.
// The router's queue time of a request is its placement less its arrival
// and Frontend, the serving frontend's latency before the router sees it.
func NewCollector(n, workers int, capture bool) *Collector {
	return &Collector{
		recs:    make([]record, 0, n),
		itl:     newSketch(),
		perUser: newSketch(),
		Series:  newSeries(workers),
		capture: capture,
	}
}

// Arrive registers request id, the next one: ids are dense from 1.
func (c *Collector) Arrive(id uint64, t timing.Time, input, requested int) {
	if id != c.base+uint64(len(c.recs))+1 {
		panic("report: request ids must be dense and in arrival order")
	}
	c.recs = append(c.recs, record{arrival: t, input: int32(input), requested: int32(requested), worker: -1, rank: -1, overlap: -1, x: noXfer})
	if c.Onboarding {
		c.parks = append(c.parks, -1)
	}
	if id == c.watch {
		c.event(TimelineEvent{At: t, Event: "arrival", InputLength: input, OutputLength: requested})
	}
}

// rec is request id's record.
func (c *Collector) rec(id uint64) *record { return &c.recs[id-1-c.base] }

// Route records where and when request id was placed, and the prompt
// tokens the router expected to be cached there (-1: no estimate).
func (c *Collector) Route(id uint64, worker, rank int, t timing.Time, overlap int) {
	r := c.rec(id)
	r.worker, r.rank = int32(worker), int32(rank)
	r.placed, r.overlap = t, int32(overlap)
	if id == c.watch {
		// Copies: a parameter whose address is kept would be moved to the
		// heap on every call, watched or not.
		w, rk, o := worker, rank, overlap
		e := TimelineEvent{At: t, Event: "routed", Worker: &w, DPRank: &rk}
		if o >= 0 {
			e.OverlapTokens = &o
		}
		c.event(e)
	}
}

// Admit records an admission, at the start of its pass, with its
// prefix-cache reuse; again marks a re-admission after a preemption (a
// next prefill chunk is not one).
func (c *Collector) Admit(id uint64, t timing.Time, reused int, again bool) {
	r := c.rec(id)
	if !r.admitted {
		r.admitted, r.firstAdmit, r.firstReused, r.lastAdmit = true, t, int32(reused), t
	}
	if again && r.tokens == 0 {
		r.lastAdmit = t
	}
	if id == c.watch && (again || r.firstAdmit == t) {
		n := reused // a copy, as in Route
		c.event(TimelineEvent{At: t, Event: "admitted", ReusedTokens: &n})
	}
	r.reused = max(r.reused, int32(reused))
	c.Series.admit(t, r.input, reused)
}

// Park records that request id parked at t to onboard lower-tier blocks.
// Only a park before its first admission is part of its TTFT breakdown.
func (c *Collector) Park(id uint64, t timing.Time) {
	if !c.rec(id).admitted && c.parks[id-1-c.base] < 0 {
		c.parks[id-1-c.base] = t
	}
	if id == c.watch {
		c.event(TimelineEvent{At: t, Event: "parked"})
	}
}

// Token records one token emitted at t by a pass that started at start,
// and returns how many the request has.
func (c *Collector) Token(id uint64, start, t timing.Time) int {
	n := c.TokenUncounted(id, start, t)
	c.Series.token(t)
	return n
}

// TokenUncounted is Token without the token's count in the time series,
// which the caller adds with CountTokens: a pass's tokens share their
// time, and one addition per pass saves a bucket lookup per token (issue
// 34 item 1; a bucket's count is an integer, so the order does not matter).
func (c *Collector) TokenUncounted(id uint64, start, t timing.Time) int {
	r := c.rec(id)
	switch r.tokens {
	case 0:
		r.first, r.firstPass = t, start
		if id == c.watch {
			c.event(TimelineEvent{At: t, Event: "first_token"})
		}
		if n := len(c.spare); n > 0 {
			// Reuse a finished request's buffer: no garbage per request.
			r.gaps, c.spare = c.spare[n-1][:0], c.spare[:n-1]
		}
	case 1:
		r.second = t
	}
	if r.tokens > 0 {
		r.gaps = append(r.gaps, t-r.last)
	}
	r.last = t
	r.tokens++
	return int(r.tokens)
}

// CountTokens adds n tokens emitted at t to the time series (see
// TokenUncounted).
func (c *Collector) CountTokens(t timing.Time, n int) {
	if n > 0 {
		c.Series.at(t).tokens += int64(n)
	}
}

// Terminal records the end of a request: completed if rejected is "",
// else rejected for that reason (e.g. "kv_capacity").
func (c *Collector) Terminal(id uint64, t timing.Time, rejected string) {
	r := c.rec(id)
	r.term = t
	c.done++
	if id == c.watch {
		e := TimelineEvent{At: t, Event: "completed", OutputLength: int(r.tokens)}
		if rejected != "" {
			e = TimelineEvent{At: t, Event: "rejected", Reason: rejected}
		}
		c.event(e)
	}
	if r.gaps != nil {
		defer func() { c.spare, r.gaps = append(c.spare, r.gaps), nil }()
	}
	if rejected != "" {
		r.status = Rejected
		k := slices.Index(c.reasons, rejected)
		if k < 0 {
			k = len(c.reasons)
			c.reasons = append(c.reasons, rejected)
		}
		r.reason = uint8(k)
		return
	}
	r.status = Completed
	if c.warm(id, r) {
		c.Series.complete(t)
		return // its gaps are not measured (warmup.go)
	}
	for _, g := range r.gaps {
		ms := g.Ms()
		c.itlStats.add(ms)
		if g <= 0 {
			c.itl.zeros++
			continue
		}
		// One logarithm serves both sketches: log(1000/x) = log 1000 − log x.
		lg := detmath.LogApprox(ms)
		c.itl.addLog(lg)
		c.perUser.addLog(log1000 - lg)
		c.puStats.add(1000 / ms)
	}
	c.Series.complete(t)
}

// Forget drops the records of the oldest n requests, which have ended, so
// that a live run's memory follows the requests in flight, not all it has
// served. A report covers only the requests it remembers.
func (c *Collector) Forget(n int) {
	clear(c.recs[:n]) // their gap buffers went to spare at their terminal
	c.recs = c.recs[n:]
	if c.Onboarding {
		c.parks = c.parks[n:]
	}
	c.base += uint64(n)
}

// Done counts requests with a terminal outcome.
func (c *Collector) Done() int {
	return c.done
}

// moments accumulates exact mean, min, max and population std.
type moments struct {
	n             int
	mean, m2      float64
	minimum, maxi float64
}

func (m *moments) add(x float64) {
	if m.n == 0 || x < m.minimum {
		m.minimum = x
	}
	if m.n == 0 || x > m.maxi {
		m.maxi = x
	}
	m.n++
	d := x - m.mean
	m.mean += d / float64(m.n)
	m.m2 += float64(d * (x - m.mean))
}

func (m *moments) std() float64 {
	if m.n == 0 {
		return 0
	}
	return math.Sqrt(m.m2 / float64(m.n))
}

// dist is a summary of one distribution.
type dist struct {
	mean, min, max, std float64
	pct                 [5]float64 // p50, p75, p90, p95, p99
	n                   int
}

var percentiles = [5]float64{50, 75, 90, 95, 99}

// rank is the rounded-rank index of percentile p among n sorted samples.
func rank(n int, p float64) int {
	return int(math.Round(float64(n-1) * p / 100))
}

// exactDist summarises samples exactly (they are sorted in place).
func exactDist(xs []float64) dist {
	var d dist
	if len(xs) == 0 {
		return d
	}
	slices.Sort(xs)
	var m moments
	for _, x := range xs {
		m.add(x)
	}
	d.n, d.mean, d.min, d.max, d.std = m.n, m.mean, m.minimum, m.maxi, m.std()
	for i, p := range percentiles {
		d.pct[i] = xs[rank(len(xs), p)]
	}
	return d
}

// sketchDist summarises a streamed distribution: exact moments, sketched
// percentiles.
func sketchDist(m moments, s *sketch) dist {
	var d dist
	if m.n == 0 {
		return d
	}
	d.n, d.mean, d.min, d.max, d.std = m.n, m.mean, m.minimum, m.maxi, m.std()
	for i, p := range percentiles {
		d.pct[i] = min(max(s.at(rank(m.n, p)), d.min), d.max)
	}
	return d
}

// sketch is a DDSketch-style log-bucketed histogram with relative accuracy
// 0.001: percentiles of millions of samples in bounded memory.
type sketch struct {
	counts []uint64 // counts[i] is bucket offset+i
	offset int
	zeros  uint64
}

const sketchAlpha = 0.001

var sketchLogGamma = detmath.Log((1 + sketchAlpha) / (1 - sketchAlpha))

const sketchMaxBins = 32768

func newSketch() sketch { return sketch{} }

var log1000 = detmath.Log(1000)

func (s *sketch) add(x float64) {
	if !(x > 0) {
		s.zeros++
		return
	}
	s.addLog(detmath.LogApprox(x))
}

// sketchInvLogGamma is 1/sketchLogGamma, rounded.
var sketchInvLogGamma = 1 / sketchLogGamma

// sketchIndex is the bucket of a sample of logarithm lg,
// ⌈lg / sketchLogGamma⌉, with a product in place of the division (issue
// 34 item 1: two per inter-token gap). Exact: below 2^20 in magnitude the
// product is within 2^-31 of the rounded quotient (two roundings of 2^-53
// each), so when it lies more than 1e-6 from an integer both have the
// same ceiling; nearer (about 2 samples in a million), or further out, it
// divides.
func sketchIndex(lg float64) int {
	q := float64(lg * sketchInvLogGamma)
	if math.Abs(q) < 1<<20 {
		k := math.Ceil(q)
		if f := k - q; f > 1e-6 && f < 1-1e-6 {
			return int(k)
		}
	}
	return int(math.Ceil(lg / sketchLogGamma))
}

// addLog adds a positive sample given its natural logarithm.
func (s *sketch) addLog(lg float64) {
	k := sketchIndex(lg)
	if len(s.counts) == 0 {
		s.offset = k
	}
	if k < s.offset {
		grow := s.offset - k
		if len(s.counts)+grow > sketchMaxBins {
			// Collapse the lowest buckets: accuracy is kept for the
			// upper percentiles that matter.
			k = s.offset
		} else {
			s.counts = append(make([]uint64, grow), s.counts...)
			s.offset = k
		}
	}
	i := k - s.offset
	if i >= len(s.counts) {
		if i >= sketchMaxBins {
			i = len(s.counts) - 1
		} else {
			s.counts = append(s.counts, make([]uint64, i+1-len(s.counts))...)
		}
	}
	s.counts[i]++
}

// at returns the value of the sample of 0-based rank r.
func (s *sketch) at(r int) float64 {
	cum := s.zeros
	if uint64(r) < cum {
		return 0
	}
	for i, n := range s.counts {
		cum += n
		if uint64(r) < cum {
			return 2 * detmath.Exp(float64(float64(s.offset+i)*sketchLogGamma)) / (1 + detmath.Exp(sketchLogGamma))
		}
	}
	return 0
}

// quantiles returns the value at each of q in [0,1] (for CDF plots).
func (s *sketch) quantiles(n int, qs []float64) []float64 {
	out := make([]float64, len(qs))
	if n == 0 {
		return out
	}
	for i, q := range qs {
		out[i] = s.at(int(math.Round(float64(n-1) * q)))
	}
	return out
}
