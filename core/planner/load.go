package planner

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Load-based scaling (Dynamo's reactive mode), every load interval and per
// pool:
//
//  1. Keep each worker's recent passes (max_num_fpm_samples, bucketed
//     retirement) and fit the pass time by least squares (regress.go):
//     prefill pools over prefill tokens, decode pools over decode KV
//     tokens, aggregated pools over both.
//  2. Estimate, for each active worker w, what a new request would see:
//     TTFT_w = the time to work through w's queued prefill tokens Q_w plus
//     the request's own uncached prompt P = ISL × (1 − hit), in passes of
//     at most C tokens (max_batched_tokens; and at most max_sequences
//     prompts of the mean queued length):
//     TTFT_w = ⌊T/C⌋·f(C) + f(T mod C) with T = Q_w + P
//     ITL_w = the pass time at w's decode load plus the request's own
//     context: g(D_w + ctx), ctx = ISL + OSL/2, D_w = w's active decode KV
//     tokens (plus ctx per waiting request on a decode worker, whose
//     waiting requests are prefilled prompts queued for decode).
//     An aggregated worker's f carries its decode load D_w and its g the
//     mean prefill tokens of its passes (prefill piggybacked on decode).
//  3. The estimate is the best worker's (min over w): it exceeds the SLA
//     only when every worker's does (Dynamo's "all engines" rule). Above
//     the SLA: +1 worker. Else, when the load spread over one worker fewer
//     (Q̄ = ΣQ_w/(n−1), D̄ = ΣD_w/(n−1)) keeps the estimate under
//     load_scaling_down_sensitivity % of the SLA (and its KV fits): −1.
//     Otherwise hold. An aggregated pool goes up if TTFT or ITL is over and
//     down only if both stay under.
//  4. Act only with ≥ load_min_observations passes kept, not while a
//     worker of the pool is still starting (Dynamo's pending-scale guard:
//     a decision waits for the previous one to land), never below the
//     pool's minimum (or the throughput floor), never above max_num_gpus.

// ingest feeds pool p's passes into its windows and forgets workers that
// left (passes of a worker no longer listed are dropped with it).
func (pl *Planner) ingest(p *pool, st PoolState, now float64) {
	// Only a worker's last MaxFPMSamples passes of a tick can stay in its
	// window: the older ones would be retired at once, and a retirement
	// scans the window, so they are skipped (a busy worker passes
	// thousands of times a tick).
	for i := range p.windows {
		p.windows[i].take = 0
	}
	p.keep = slices.Grow(p.keep[:0], len(st.Passes))[:len(st.Passes)]
	for i := len(st.Passes) - 1; i >= 0; i-- {
		ps := &st.Passes[i]
		p.keep[i] = false
		if !p.usable(ps) {
			continue
		}
		if w := p.window(ps.Worker); w.take < pl.cfg.MaxFPMSamples {
			w.take++
			p.keep[i] = true
		}
	}
	for i, ps := range st.Passes {
		if !p.keep[i] {
			continue
		}
		pl.seq++
		s := sample{x1: float64(max(ps.PrefillTokens, 0)), x2: float64(max(ps.DecodeKVTokens, 0)), y: ps.Ms, seq: pl.seq, at: ps.EndMs}
		w := p.window(ps.Worker)
		w.samples = append(w.samples, s)
	}
	// The horizon retires passes older than FPMHorizonS first: bucketed
	// retirement alone keeps a past peak's passes for as long as the load
	// stays low (they sit in buckets the low load never fills), and the
	// fit keeps pricing the peak (issue 31 item 1).
	cut := now - pl.cfg.horizonMs()
	for i := range p.windows {
		w := &p.windows[i]
		if len(w.samples) > 0 && w.samples[0].at < cut { // kept in pass order: the first is the oldest
			w.samples = slices.DeleteFunc(w.samples, func(s sample) bool { return s.at < cut })
		}
		w.trim(pl.cfg.MaxFPMSamples, pl.cfg.FPMBucketSize, p.role)
	}
	n := len(p.windows)
	p.windows = slices.DeleteFunc(p.windows, func(w window) bool {
		return !slices.ContainsFunc(st.Workers, func(wl WorkerLoad) bool { return wl.ID == w.worker })
	})
	if len(p.windows) != n {
		p.index()
	}
}

// usable reports whether a pass informs p's fit: it took time, and did
// the work the pool's model prices.
func (p *pool) usable(ps *PassSample) bool {
	if !(ps.Ms > 0) || math.IsInf(ps.Ms, 0) {
		return false // idle heartbeats (and nonsense) carry no timing
	}
	switch p.role {
	case prefill:
		return ps.PrefillTokens > 0
	case decode:
		return ps.DecodeRequests > 0
	}
	return ps.PrefillTokens > 0 || ps.DecodeRequests > 0
}

// window is worker id's window, added (in id order) if new.
func (p *pool) window(id int) *window {
	if id >= 0 && id < len(p.byID) && p.byID[id] > 0 {
		return &p.windows[p.byID[id]-1] // every pass asks: no search
	}
	i, ok := slices.BinarySearchFunc(p.windows, id, func(w window, id int) int { return w.worker - id })
	if !ok {
		p.windows = slices.Insert(p.windows, i, window{worker: id})
		p.index()
	}
	return &p.windows[i]
}

// index maps worker ids to their windows (after windows came or went).
func (p *pool) index() {
	clear(p.byID)
	for i, w := range p.windows {
		if w.worker < 0 || w.worker > 1<<24 {
			continue // not indexed: found by search
		}
		if w.worker >= len(p.byID) {
			p.byID = append(p.byID, make([]int32, w.worker+1-len(p.byID))...)
		}
		p.byID[w.worker] = int32(i + 1)
	}
}

// samples are the pool's kept passes, worker by worker in id order (so
// the fits sum in a fixed order).
func (p *pool) samples() []sample {
	var ss []sample
	for _, w := range p.windows {
		ss = append(ss, w.samples...)
	}
	return ss
}

// estimate is one pool's load estimates.
type estimate struct {
	ttft, itl         float64 // the best worker's, for a new request (NaN: not computed)
	ttftDown, itlDown float64 // with the load spread over one worker fewer (NaN: not possible)
	kvFitsDown        bool    // the spread decode load fits one worker's KV cache
	n                 int     // active workers
}

// estimate computes pool p's estimates from its kept passes and workers.
func (pl *Planner) estimate(p *pool, st PoolState) estimate {
	e := estimate{ttft: math.NaN(), itl: math.NaN(), ttftDown: math.NaN(), itlDown: math.NaN(), kvFitsDown: true}
	var ws []WorkerLoad
	for _, w := range st.Workers {
		if !w.Draining {
			ws = append(ws, w)
		}
	}
	e.n = len(ws)
	if e.n == 0 {
		return e
	}
	prompt, ctx := pl.requestShape(ws)
	ss := p.samples()
	var f linFit
	var meanPrefill float64
	switch p.role {
	case prefill:
		f = fitPrefill(ss)
	case decode:
		f = fitDecode(ss)
	default:
		f = fit2(ss)
		for _, s := range ss {
			meanPrefill += s.x1
		}
		meanPrefill /= float64(max(len(ss), 1))
	}
	decodeLoad := func(w WorkerLoad) float64 {
		d := float64(max(w.ActiveKVTokens, 0))
		if p.role == decode {
			d += float64(float64(max(w.Waiting, 0)) * ctx)
		}
		return d
	}
	ttft := func(queued, waiting, d float64) float64 {
		return ttftSim(f, queued+prompt, d, p.chunk((queued+prompt)/(waiting+1)))
	}
	itl := func(prefill, d float64) float64 { return f.at(prefill, d+ctx) }
	var sumQ, sumW, sumD, sumITL float64
	e.ttft, e.itl = math.Inf(1), math.Inf(1)
	for _, w := range ws {
		q, wt, d := float64(max(w.QueuedPrefillTokens, 0)), float64(max(w.Waiting, 0)), decodeLoad(w)
		sumQ, sumW, sumD = sumQ+q, sumW+wt, sumD+d
		if p.role != decode {
			e.ttft = min(e.ttft, ttft(q, wt, d))
		}
		if p.role != prefill {
			v := itl(meanPrefill, d)
			e.itl, sumITL = min(e.itl, v), sumITL+v
		}
	}
	if p.role == decode {
		e.ttft = math.NaN()
	}
	if p.role == prefill {
		e.itl = math.NaN()
	}
	if m := float64(e.n - 1); m >= 1 {
		q, wt, d := sumQ/m, sumW/m, sumD/m
		if p.role != decode {
			e.ttftDown = ttft(q, wt, d)
		}
		if p.role != prefill {
			// An aggregated pass carries the prefill of its worker's
			// arrivals: with one worker fewer each takes n/(n−1) of it.
			e.itlDown = itl(meanPrefill*float64(e.n)/m, d)
			e.kvFitsDown = p.KVTokens <= 0 || d+ctx <= float64(p.KVTokens)
		}
	}
	// Dynamo's correction factor: the fit prices passes, a request's ITL
	// is what its passes averaged (in an aggregated pool, with other
	// requests' prefill chunks in some of them). Scale both ITL estimates
	// by observed ÷ estimated, so the decision keeps the model's ratio
	// between n and n−1 workers but the observed level.
	//
	// The ratio compares like with like: the observed ITL is the mean over
	// the requests of all workers, so it is divided by the mean of the
	// workers' estimates, not the best worker's. Against the best worker a
	// worker that just became ready (idle, its estimate low) next to one
	// still working off the backlog made the ratio, and the estimate,
	// jump: the planner added a third worker the moment the second came
	// up (issue 31 item 1).
	//
	// And it is learned only from requests the current workers served:
	// the requests completing now arrived about a TTFT + OSL × ITL ago,
	// so for that long after the pool's workers changed the ratio of the
	// last settled tick stays (k). A worker that just became ready is
	// capacity the observed ITL has not seen yet; learning from the
	// backlog's ITL then made the estimate several times the SLA.
	if obs, mean := pl.lastITL, sumITL/float64(e.n); p.role != prefill && obs > 0 && mean > 0 && !math.IsInf(mean, 0) &&
		!(pl.now-p.changedMs < pl.lagMs) {
		p.k = min(max(obs/mean, 0.2), 5)
	}
	if k := p.k; p.role != prefill && k > 0 && !math.IsInf(e.itl, 0) {
		e.itl, e.itlDown = e.itl*k, e.itlDown*k
	}
	return e
}

// requestShape is a new request's uncached prompt tokens and mean decode
// context (ISL + OSL/2), from the last traffic seen; before any request
// completed, the prompt is the mean queued one.
func (pl *Planner) requestShape(ws []WorkerLoad) (prompt, ctx float64) {
	isl, osl := pl.lastISL, pl.lastOSL
	if math.IsNaN(isl) {
		var q, n float64
		for _, w := range ws {
			q += float64(max(w.QueuedPrefillTokens, 0))
			n += float64(max(w.Waiting, 0))
		}
		isl = 0
		if n > 0 {
			isl = q / n
		}
	}
	if math.IsNaN(osl) {
		osl = 0
	}
	return float64(isl * (1 - pl.hit)), isl + osl/2
}

// chunk is the most prefill tokens one pass of the pool takes when the
// prompts average avg tokens: max_batched_tokens, and max_sequences
// prompts (+Inf: unbounded).
func (p *pool) chunk(avg float64) float64 {
	c := math.Inf(1)
	if p.MaxBatchedTokens > 0 {
		c = float64(p.MaxBatchedTokens)
	}
	if p.MaxSeqs > 0 && avg > 0 {
		c = min(c, float64(float64(p.MaxSeqs)*avg))
	}
	return c
}

// ttftSim is the time to prefill t tokens in passes of at most c tokens
// with d decode KV tokens riding along: ⌊t/c⌋ full passes and the rest.
func ttftSim(f linFit, t, d, c float64) float64 {
	if !(t > 0) {
		return 0
	}
	if math.IsInf(c, 1) || c >= t {
		return f.at(t, d)
	}
	full := math.Floor(t / c)
	est := float64(full * f.at(c, d))
	if rem := t - float64(full*c); rem > 0 {
		est += f.at(rem, d)
	}
	return est
}

// loadPool runs load-based scaling for pool i, moving targets[i] by at
// most one, and says why.
func (pl *Planner) loadPool(i int, st PoolState, targets []int, diag *Diagnostics) string {
	p := &pl.pools[i]
	if st.Starting > 0 {
		return fmt.Sprintf("%s hold: %d worker%s starting", p.Name, st.Starting, plural(st.Starting))
	}
	// Starting workers count as capacity until the observations see them
	// (Dynamo's load planner: "no new action until the previous one
	// completes"). Ready is not landed: the requests completing now
	// arrived about a TTFT + OSL × ITL ago, before the worker served any,
	// so for that long (at most the cool-down) the observed ITL is the
	// backlog's. Acting on it added a third worker the moment the second
	// came up (issue 31 item 1).
	// The span is fixed at the first load tick after the ready (the lag
	// shrinks as the backlog's requests complete), and it is twice the
	// mean lag: the mean request of the backlog completes after one lag,
	// its tail (longer outputs, later queue positions) about one more. At
	// one lag the third worker was still added, 20 s after the ready, on
	// an observed ITL of 37 ms that was 11 ms 30 s later.
	if p.settleMs < 0 {
		p.settleMs = min(2*pl.lagMs, pl.cfg.cooldownMs())
	}
	if since := pl.now - p.readyMs; since < p.settleMs {
		return fmt.Sprintf("%s hold: the worker ready at t=%s s is not in the observed requests yet (%s of %s s)",
			p.Name, num(p.readyMs/1000), num(since/1000), num(p.settleMs/1000))
	}
	obs := 0
	for _, w := range p.windows {
		obs += len(w.samples)
	}
	if obs < pl.cfg.MinObservations {
		return fmt.Sprintf("%s hold: %d/%d passes observed", p.Name, obs, pl.cfg.MinObservations)
	}
	e := pl.estimate(p, st)
	if e.n == 0 {
		return fmt.Sprintf("%s hold: no active worker", p.Name)
	}
	if math.IsNaN(diag.EstTTFTMs) {
		diag.EstTTFTMs = e.ttft
	}
	if math.IsNaN(diag.EstITLMs) {
		diag.EstITLMs = e.itl
	}
	slaT, slaI := pl.cfg.TTFTMs, pl.cfg.ITLMs
	useT := p.role != decode && slaT > 0
	useI := p.role != prefill && slaI > 0
	if !useT && !useI {
		return fmt.Sprintf("%s hold: no SLA bound applies", p.Name)
	}
	var over, est []string
	if useT {
		est = append(est, "TTFT "+num(e.ttft)+" ms")
		if e.ttft > slaT {
			over = append(over, fmt.Sprintf("est TTFT %s ms > %s ms SLA", num(e.ttft), num(slaT)))
		}
	}
	if useI {
		est = append(est, "ITL "+num(e.itl)+" ms")
		if e.itl > slaI {
			over = append(over, fmt.Sprintf("est ITL %s ms > %s ms SLA", num(e.itl), num(slaI)))
		}
	}
	if len(over) > 0 {
		p.downStreak = 0
		why := strings.Join(over, ", ")
		if pl.gpus(targets)+p.GPUsPerWorker > pl.cfg.MaxGPUs || targets[i] >= p.maxW {
			return fmt.Sprintf("%s: %s hold at the %d-GPU ceiling", why, p.Name, pl.cfg.MaxGPUs)
		}
		targets[i]++
		return fmt.Sprintf("%s: %s +1", why, p.Name)
	}
	return pl.loadDown(i, e, targets, "est "+strings.Join(est, ", "), useT, useI)
}

// loadDown is loadPool for a pool within its SLA bounds (now says its
// estimates): it gives a worker back once the estimates with one worker
// fewer stayed under the scale-down share of the bounds long enough.
func (pl *Planner) loadDown(i int, e estimate, targets []int, now string, useT, useI bool) string {
	p := &pl.pools[i]
	slaT, slaI := pl.cfg.TTFTMs, pl.cfg.ITLMs
	lower := max(p.min, p.floor)
	if targets[i]-1 < lower {
		return fmt.Sprintf("%s: %s hold at its lower bound of %d", now, p.Name, lower)
	}
	// Hysteresis: no scale-down within the cool-down of the pool's last
	// scale-up. The estimates right after an add see the backlog the new
	// worker just took over drained away, not the load (issue 31 item 1).
	if since := pl.now - p.lastUpMs; since < pl.cfg.cooldownMs() {
		p.downStreak = 0
		return fmt.Sprintf("%s: %s hold: cool-down after the add at t=%s s (%s of %s s)", now, p.Name,
			num(p.lastUpMs/1000), num(since/1000), num(pl.cfg.cooldownMs()/1000))
	}
	share := pl.cfg.ScaleDownSensitivity / 100
	under := e.kvFitsDown
	var down []string
	if useT {
		under = under && e.ttftDown < float64(share*slaT)
		down = append(down, "TTFT "+num(e.ttftDown)+" ms")
	}
	if useI {
		under = under && e.itlDown < float64(share*slaI)
		down = append(down, "ITL "+num(e.itlDown)+" ms")
	}
	if !under {
		p.downStreak = 0
		return fmt.Sprintf("%s: %s hold", now, p.Name)
	}
	// A snapshot right after a scale-up sees the queue the new worker just
	// drained: one low estimate would give the worker back and the queue
	// would build again (flapping). Scale down only when the estimates
	// stayed low for ScaleDownTicks load ticks in a row.
	if p.downStreak++; p.downStreak < pl.cfg.ScaleDownTicks {
		return fmt.Sprintf("est %s at %d worker%s < %s%% of SLA (%d/%d ticks): %s hold",
			strings.Join(down, ", "), e.n-1, plural(e.n-1), num(pl.cfg.ScaleDownSensitivity), p.downStreak, pl.cfg.ScaleDownTicks, p.Name)
	}
	p.downStreak = 0
	targets[i]--
	return fmt.Sprintf("est %s at %d worker%s < %s%% of SLA: %s -1",
		strings.Join(down, ", "), e.n-1, plural(e.n-1), num(pl.cfg.ScaleDownSensitivity), p.Name)
}
