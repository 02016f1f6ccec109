package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/schema"
	"github.com/dynosim/dynosim-web/timing"
)

// Disaggregated serving's part of the report: where each request was
// prefilled and decoded, what its KV transfer moved and took, and the
// pools' sizes for the GPU accounting.

// xfer is the disaggregated part of a request's record.
type xfer struct {
	pworker, prank int32 // prefill worker and rank; -1: not disaggregated
	decodeReused   int32 // prompt tokens the decode side had cached; -1: unknown
	tokens         int32 // prompt tokens transferred; -1: no transfer yet
	start, end     timing.Time
	bytes          float64
}

var noXfer = xfer{pworker: -1, prank: -1, decodeReused: -1, tokens: -1}

// Decode records request id's decode placement at t: its prefill placement
// (Route) becomes the prefill worker, and worker, rank the one whose tokens
// the request streams.
func (c *Collector) Decode(id uint64, worker, rank int, t timing.Time) {
	r := c.rec(id)
	r.x.pworker, r.x.prank = r.worker, r.rank
	r.worker, r.rank = int32(worker), int32(rank)
	if id == c.watch {
		w, rk := worker, rank // copies, as in Route
		c.event(TimelineEvent{At: t, Event: schema.EventRouted, Worker: &w, DPRank: &rk})
	}
}

// DecodeReuse records the prompt tokens the decode side already had
// (the first time only: a readmission after preemption is not a handoff).
func (c *Collector) DecodeReuse(id uint64, tokens int) {
	if r := c.rec(id); r.x.decodeReused < 0 {
		r.x.decodeReused = int32(tokens)
	}
}

// Transfer records request id's KV transfer.
func (c *Collector) Transfer(id uint64, start, end timing.Time, tokens int, bytes float64) {
	r := c.rec(id)
	r.x.start, r.x.end, r.x.tokens, r.x.bytes = start, end, int32(tokens), bytes
	if id == c.watch {
		c.event(TimelineEvent{At: start, End: end, Event: schema.EventKVTransfer, Tokens: tokens, Bytes: bytes})
	}
}

// PrefillDone records the end of request id's prefill on the prefill
// pool (its hidden copy's terminal pass).
func (c *Collector) PrefillDone(id uint64, t timing.Time) {
	c.rec(id).prefillEnd = t
	if id == c.watch {
		c.event(TimelineEvent{At: t, Event: schema.EventPrefillDone})
	}
}

// record fills the disaggregated fields of a request record.
func (x *xfer) record(rr *RequestRecord) {
	if x.pworker < 0 {
		return
	}
	w, r := int(x.pworker), int(x.prank)
	rr.PrefillWorker, rr.PrefillDPRank = &w, &r
	if x.decodeReused >= 0 {
		d := int(x.decodeReused)
		rr.DecodeReusedInputTokens = &d
	}
	if x.tokens >= 0 {
		t, b, s, d := int(x.tokens), x.bytes, x.start.Ms(), (x.end - x.start).Ms()
		rr.KVTransferTokens, rr.KVTransferBytes, rr.KVTransferStartMs, rr.KVTransferMs = &t, &b, &s, &d
	}
}

// PoolInfo describes one pool of the run.
type PoolInfo struct {
	Name          string // aggregated | prefill | decode
	Workers       int
	GPUsPerWorker int
}

// PoolStats is schema.PoolStats: the section's shape lives in the schema.
type PoolStats = schema.PoolStats

// TransferInfo is schema.TransferInfo: the section's shape lives in the schema.
type TransferInfo = schema.TransferInfo

// TransferStats is schema.TransferStats: the section's shape lives in the schema.
type TransferStats = schema.TransferStats

// buildPools renders the pool sections and the GPU accounting of the summary.
func buildPools(r *Report, info RunInfo, s Summary) {
	first, gpus := 0, 0
	durMs := info.ClockEnd.Ms()
	for _, p := range info.Pools {
		ps := PoolStats{Name: p.Name, FirstWorker: first, Workers: p.Workers, GPUsPerWorker: p.GPUsPerWorker, GPUs: p.Workers * p.GPUsPerWorker}
		provisioned := 0.0 // ms, planner runs
		for i := range r.Workers {
			w := &r.Workers[i]
			if w.Pool == "" && i >= first && i < first+p.Workers {
				w.Pool = p.Name // the loop names pools; tests that build a report may not
			}
			if w.Pool != p.Name {
				continue
			}
			ps.Requests += w.Requests
			ps.OutputTokens += w.OutputTokens
			ps.BusyMs += w.BusyMs
			ps.Preemptions += w.Preemptions
			if w.ProvisionedMs != nil {
				provisioned += *w.ProvisionedMs
			}
		}
		for i := range r.Workers {
			if r.Workers[i].Pool == p.Name && ps.Requests > 0 {
				r.Workers[i].RequestShare = float64(r.Workers[i].Requests) / float64(ps.Requests)
			}
		}
		ps.Utilization = nullable(ps.BusyMs / (float64(p.Workers) * durMs))
		ws := float64(p.Workers) * durMs / 1000
		if info.Planner != nil {
			// Workers came and went: their provisioned time, not the
			// pool's size × the duration, and the most provisioned at once.
			ps.Utilization = nullable(ps.BusyMs / provisioned)
			ws = provisioned / 1000
			ps.Workers = info.Planner.peak(p.Name)
			ps.GPUs = ps.Workers * p.GPUsPerWorker
		}
		// The reference's accounting names an aggregated pool decode.
		seconds, perWorker := schema.DecodeWorkerSeconds, schema.DecodeGPUsPerWorker
		if p.Name == "prefill" {
			seconds, perWorker = schema.PrefillWorkerSeconds, schema.PrefillGPUsPerWorker
		}
		s[seconds] = ws
		s[perWorker] = float64(p.GPUsPerWorker)
		s[schema.GPUHours] += ws * float64(p.GPUsPerWorker) / 3600
		gpus += ps.GPUs
		first += p.Workers
		r.Pools = append(r.Pools, ps)
	}
	s[schema.TotalGPUs] = float64(gpus)
}

// buildTransfer renders the kv_transfer section and its summary keys.
func buildTransfer(c *Collector, info *TransferInfo, s Summary) *TransferStats {
	t := &TransferStats{TransferInfo: *info}
	var ms []float64
	prompt, reused := 0, 0
	for i := range c.recs {
		q := &c.recs[i]
		if q.x.tokens < 0 {
			continue
		}
		t.Handoffs++
		t.TransferredTokens += int(q.x.tokens)
		t.TransferredBytes += q.x.bytes
		d := (q.x.end - q.x.start).Ms()
		ms = append(ms, d)
		t.TotalMs += d
		if q.x.tokens == 0 {
			t.ZeroTransfers++
		}
		prompt += int(q.input)
		reused += int(max(q.x.decodeReused, 0))
	}
	mean, p99 := math.NaN(), math.NaN()
	if len(ms) > 0 {
		dd := exactDist(ms)
		mean, p99 = dd.mean, dd.pct[4]
	}
	t.MeanMs, t.P99Ms = nullable(mean), nullable(p99)
	t.DecodeReusedRatio = nullable(ratio(reused, prompt))
	s[schema.KVTransferHandoffs] = float64(t.Handoffs)
	s[schema.KVTransferBytes] = t.TransferredBytes
	s[schema.MeanKVTransferMs] = mean
	return t
}

// nullable is v, or nil (null) when v is undefined.
func nullable(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// tablePools adds a disaggregated run's pools and transfers to the table.
func (r *Report) tablePools(b *strings.Builder) {
	if r.KVTransfer == nil {
		return
	}
	for _, p := range r.Pools {
		fmt.Fprintf(b, "Pool %s: %d workers × %d GPUs, %d requests, utilization %s\n", p.Name, p.Workers, p.GPUsPerWorker, p.Requests, ratio4(deref(p.Utilization)))
	}
	k := r.KVTransfer
	fmt.Fprintf(b, "KV transfer (%s", k.Handoff)
	if k.Order != "" {
		fmt.Fprintf(b, ", %s, %s", k.Order, k.TimingMode)
	}
	fmt.Fprintf(b, "): %d handoffs, %s GB, mean %s ms, p99 %s ms\n", k.Handoffs, num(k.TransferredBytes/1e9), num(deref(k.MeanMs)), num(deref(k.P99Ms)))
}

func deref(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}
