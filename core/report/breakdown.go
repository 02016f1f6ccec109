package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/metrics"
	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/timing"
)

// The TTFT breakdown: every request's time to first token cut at the
// boundaries the replay records, so that its parts add up to its TTFT to
// the nanosecond (they are differences of consecutive boundaries).
//
//	aggregated:     arrival │frontend│ router │router_queue│ placed │engine_queue│ parked
//	                │onboarding│ first admission │preemption│ last re-admission │prefill│
//	                first token's pass │first_token_pass│ token
//	disaggregated:  … last re-admission │prefill│ prefill end │kv_transfer_wait│ transfer start
//	                │kv_transfer│ transfer end │decode_queue│ decode's first pass │first_token_pass│ token
//
// Admissions are at the start of their pass. With KVBM lower tiers a
// request may park first, at the start of the pass that began bringing
// its prefix back from G2/G3/G4: onboarding runs from there to its first
// admission (0 for a request that never parked). A preemption before the
// first token throws away the work since the first admission, so that
// span, and the wait to be re-admitted, is the preemption part. Prefill
// runs from the admission that stuck to the pass that emits the first
// token, by chunks, including any pass the request sat out between
// chunks; on a disaggregated run it ends with the prefill worker's last
// pass, and the decode side's queue (its router and engine, or a
// re-admission there) is decode_queue.

// Breakdown is one request's ttft_breakdown_ms. The disaggregated parts are
// absent in aggregated runs.
type Breakdown struct {
	Frontend       float64  `json:"frontend"`
	RouterQueue    float64  `json:"router_queue"`
	EngineQueue    float64  `json:"engine_queue"`
	Onboarding     *float64 `json:"onboarding,omitempty"` // runs with lower tiers
	Preemption     float64  `json:"preemption"`
	Prefill        float64  `json:"prefill"`
	KVTransferWait *float64 `json:"kv_transfer_wait,omitempty"`
	KVTransfer     *float64 `json:"kv_transfer,omitempty"`
	DecodeQueue    *float64 `json:"decode_queue,omitempty"`
	FirstTokenPass float64  `json:"first_token_pass"`
}

// Values lists b's parts in order (onboarding only with lower tiers, the
// three transfer parts only when disaggregated).
func (b *Breakdown) Values() []float64 {
	out := []float64{b.Frontend, b.RouterQueue, b.EngineQueue}
	if b.Onboarding != nil {
		out = append(out, *b.Onboarding)
	}
	out = append(out, b.Preemption, b.Prefill)
	for _, p := range []*float64{b.KVTransferWait, b.KVTransfer, b.DecodeQueue} {
		if p != nil {
			out = append(out, *p)
		}
	}
	return append(out, b.FirstTokenPass)
}

// BreakdownSection is schema.BreakdownSection: the section's shape lives in the schema.
type BreakdownSection = schema.BreakdownSection

// BreakdownPart is schema.BreakdownPart: the section's shape lives in the schema.
type BreakdownPart = schema.BreakdownPart

// nParts is the number of parts (metrics.TTFTParts names them, in order:
// the JSON field names above, and the section's part names).
const nParts = 10

// tierPart is the part only runs with lower tiers have; disaggParts mark
// the parts only a disaggregated run has.
const tierPart = 3

var disaggParts = [nParts]bool{6: true, 7: true, 8: true}

// parts cuts request id's TTFT (it has a first token) at its boundaries; frontend is
// the collector's Frontend. The parts are consecutive differences of
// non-decreasing times, so they are ≥ 0 and sum to first − arrival.
func (c *Collector) parts(id uint64) [nParts]timing.Time {
	q := c.rec(id)
	parked := q.firstAdmit
	if c.Onboarding && c.parks[id-1-c.base] >= 0 {
		parked = c.parks[id-1-c.base]
	}
	b := [nParts + 1]timing.Time{q.arrival, q.arrival + c.Frontend, q.placed, parked, q.firstAdmit, q.lastAdmit}
	if q.x.pworker < 0 {
		// Aggregated: no transfer; the prefill ends where the first
		// token's pass starts.
		b[6], b[7], b[8], b[9] = q.firstPass, q.firstPass, q.firstPass, q.firstPass
	} else {
		start, end := q.x.start, q.x.end
		if q.x.tokens < 0 { // never transferred (cannot have a token; defensive)
			start, end = q.prefillEnd, q.prefillEnd
		}
		b[6], b[7], b[8], b[9] = q.prefillEnd, start, end, q.firstPass
	}
	b[10] = q.first
	var p [nParts]timing.Time
	for i := range p {
		p[i] = b[i+1] - b[i]
	}
	return p
}

// breakdown is q's per-request record of the parts.
func (c *Collector) breakdown(id uint64) *Breakdown {
	q := c.rec(id)
	p := c.parts(id)
	b := &Breakdown{
		Frontend: p[0].Ms(), RouterQueue: p[1].Ms(), EngineQueue: p[2].Ms(), Preemption: p[4].Ms(),
		Prefill: p[5].Ms(), FirstTokenPass: p[9].Ms(),
	}
	if c.Onboarding {
		o := p[tierPart].Ms()
		b.Onboarding = &o
	}
	if q.x.pworker >= 0 {
		w, t, d := p[6].Ms(), p[7].Ms(), p[8].Ms()
		b.KVTransferWait, b.KVTransfer, b.DecodeQueue = &w, &t, &d
	}
	return b
}

// breakdownSection summarises the parts over the requests of the TTFT
// distribution (completed, with a first token). One part at a time, in
// one reused buffer: cutting a TTFT is ten subtractions, cheaper than
// keeping every request's parts.
func (c *Collector) breakdownSection(disagg bool) *BreakdownSection {
	var total timing.Time
	n := 0
	for i := range c.recs {
		if q := &c.recs[i]; q.status == Completed && q.tokens > 0 && !c.warm(c.base+uint64(i+1), q) {
			total += q.first - q.arrival
			n++
		}
	}
	if n == 0 {
		return nil
	}
	s := &BreakdownSection{Requests: n, MeanTTFTMs: total.Ms() / float64(n)}
	vals := make([]float64, 0, n)
	for k, p := range metrics.TTFTParts {
		if disaggParts[k] && !disagg || k == tierPart && !c.Onboarding {
			continue
		}
		var sum timing.Time
		vals = vals[:0]
		for i := range c.recs {
			if q := &c.recs[i]; q.status == Completed && q.tokens > 0 && !c.warm(c.base+uint64(i+1), q) {
				d := c.parts(uint64(i + 1))[k]
				sum += d
				vals = append(vals, d.Ms())
			}
		}
		d := exactDist(vals)
		s.Parts = append(s.Parts, BreakdownPart{Part: p.Key, MeanMs: sum.Ms() / float64(n), P50Ms: d.pct[0], P99Ms: d.pct[4]})
	}
	return s
}

// tableBreakdown writes the console table's breakdown line: each part's
// mean, in order.
func (r *Report) tableBreakdown(b *strings.Builder) {
	s := r.TTFTBreakdown
	if s == nil {
		return
	}
	parts := make([]string, len(s.Parts))
	for i, p := range s.Parts {
		parts[i] = fmt.Sprintf("%s %s", p.Part, strconv.FormatFloat(p.MeanMs, 'f', 2, 64))
	}
	fmt.Fprintf(b, "TTFT breakdown, mean ms (%d requests): %s = %s\n", s.Requests, strings.Join(parts, " + "), strconv.FormatFloat(s.MeanTTFTMs, 'f', 2, 64))
}
