// Package planner holds the scaling planner's policies (spec §9.1–9.2):
// load-based scaling (reactive: online regressions of pass time over the
// forward-pass metrics, ±1 worker per interval against the TTFT and ITL
// SLA) and throughput-based scaling (predictive: forecast the next
// interval's traffic, convert it into workers with the pool's timing
// model). Both follow the public description of NVIDIA Dynamo's Planner
// (Planner Guide and Planner Design); the formulas are written out where
// they are computed.
//
// The planner is a pure state machine, like etcd's raft: the replay loop
// calls Tick with a settled snapshot of the cluster and applies the
// targets it returns. It does no I/O, reads no clock and draws no random
// numbers, so the same snapshots give the same decisions.
package planner

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dynosim/dynosim-web/core/report/metrics"
	"github.com/dynosim/dynosim-web/timing"
)

// Pool is one scalable pool of workers.
type Pool struct {
	Name          string // aggregated | prefill | decode
	GPUsPerWorker int
	MinWorkers    int // 0 counts as 1: a pool keeps a worker for its requests to go to
	// The run's timing model for this pool's workers, for throughput-based scaling's capacity:
	Model            timing.Model
	Scale            timing.Scale // applied as the engine does
	MaxBatchedTokens int          // per pass (0: unbounded)
	MaxSeqs          int          // per worker (0: unbounded)
	KVTokens         int          // KV-cache capacity of one worker in tokens (0: unbounded)
}

// Snapshot is what the planner sees at a tick, after same-time settlement.
type Snapshot struct {
	Tick    int // ordinal from 0
	NowMs   float64
	Pools   []PoolState // same order as the Pools given to New
	Traffic Traffic     // since the previous tick
	Work    bool        // requests are still to arrive or in flight (ticks re-arm only while true)
}

// PoolState is a pool at a tick.
type PoolState struct {
	Active, Starting, Draining int
	Workers                    []WorkerLoad // the active and draining workers, by id
	Passes                     []PassSample // passes of this pool's workers that ended since the previous tick, in time order
}

// WorkerLoad is one worker's load at a tick.
type WorkerLoad struct {
	ID, Running, Waiting int
	QueuedPrefillTokens  int     // prompt tokens waiting (not yet computed) on the worker
	ActiveKVTokens       int     // KV tokens of its running requests
	KVUsage              float64 // 0..1
	Draining             bool
}

// PassSample is one finished pass's forward-pass metrics (spec §1.6).
type PassSample struct {
	Worker                                          int
	EndMs, Ms                                       float64 // when it ended, how long it took
	PrefillRequests, PrefillTokens, PrefillKVTokens int
	DecodeRequests, DecodeKVTokens                  int
}

// Traffic is the requests completed since the previous tick.
type Traffic struct {
	IntervalS             float64
	Requests              int // requests that completed in the interval
	MeanISL, MeanOSL      float64
	KVHitRate             float64 // prompt tokens served from cache / prompt tokens (NaN: none seen)
	AcceptLength          float64 // tokens per decode forward (1 without speculation; NaN: none seen)
	MeanTTFTMs, MeanITLMs float64 // of the completed requests (NaN if none)
}

// Decision is the planner's answer.
type Decision struct {
	Targets []int   // per pool: workers wanted (active + starting), within the minimums and max_num_gpus
	NextMs  float64 // the next tick, strictly after NowMs; NaN: no more ticks
	Reason  string  // short, e.g. "load: est TTFT 812 ms > 500 ms SLA: prefill +1"
	// Action is the tick's outcome over all pools: ActionUp if a target
	// rose, else ActionDown if one fell, else ActionHold.
	Action string
	Diag   Diagnostics
}

// Diagnostics are a tick's intermediate numbers, NaN where not computed
// this tick.
type Diagnostics struct {
	EstTTFTMs, EstITLMs float64 // load-based estimates
	// Throughput-based: the predictions for the next throughput interval
	// (requests in it, mean lengths) and the traffic the prediction saw
	// (requests completed in the window since the last throughput tick).
	PredRequests, PredISL, PredOSL             float64
	ObservedRequests, ObservedISL, ObservedOSL float64
	PredRate, ObservedRate                     float64 // the same requests per second
	Floor                                      []int   // per pool: the throughput-based lower bound in force (0: none)
}

// The Decision.Action values (the report's planner.ticks[].action).
const (
	ActionUp   = "scale_up"
	ActionDown = "scale_down"
	ActionHold = "hold"
)

// role is what a pool's workers do.
type role uint8

const (
	aggregated role = iota
	prefill
	decode
)

// pool is a Pool with the planner's state for it.
type pool struct {
	Pool
	role      role
	min, maxW int      // worker bounds: the minimum, and what max_num_gpus holds alone
	floor     int      // the throughput-based lower bound (hybrid; 0: none yet)
	windows   []window // load-based: kept passes per worker, by worker id
	keep      []bool   // ingest's buffer
	byID      []int32  // worker id → index into windows + 1 (0: none)
	// downStreak counts the consecutive load ticks whose estimates at one
	// worker fewer stayed under the sensitivity; -1 only after downTicks.
	downStreak int
	// lastUpMs is when the pool's target last rose (either policy; NaN:
	// never): the scale-down cool-down counts from it.
	lastUpMs float64
	// k is the load-based ITL correction last learned (NaN: none yet);
	// changedMs is when the pool's worker counts last changed and seen
	// the counts then (estimate: k is not learned for a lag after).
	k         float64
	changedMs float64
	seen      [3]int
	readyMs   float64 // when the pool last gained an active worker (NaN: never)
	settleMs  float64 // how long after readyMs load-based scaling holds (-1: not fixed yet)
}

// Planner is the scaling planner's state between ticks.
type Planner struct {
	cfg   Config
	pools []pool

	loadMs, thrMs float64 // the intervals in ms
	loadK, thrK   float64 // the next due ticks are loadK·loadMs and thrK·thrMs
	lastThrMs     float64 // when throughput-based scaling last ran (0: the start)

	// Throughput-based: the predictors and the traffic since the last
	// throughput tick.
	rate, isl, osl predictor
	acc            traffic

	// The latest valid traffic shape (NaN: none yet), the KV hit rate and
	// accept length (Dynamo's last-value semantics: 0 and 1 at start).
	lastISL, lastOSL, hit, accept float64
	// lastITL is the mean ITL of the requests the last tick saw complete
	// (NaN: none yet): the load-based ITL estimate's correction.
	lastITL float64
	// lagMs is how long ago the requests the last tick saw complete
	// arrived, about: their mean TTFT + OSL × ITL (0: unknown).
	lagMs float64

	seq uint64  // samples taken
	now float64 // the tick's time, ms
}

// traffic accumulates the ticks' Traffic between throughput ticks.
type traffic struct {
	seconds        float64
	requests       int
	islSum, oslSum float64
	islN, oslN     int
}

// New checks cfg against the pools and returns a planner at time 0.
func New(cfg Config, pools []Pool) (*Planner, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(pools) == 0 {
		return nil, errors.New("planner: no pools to scale")
	}
	pl := &Planner{cfg: cfg, loadK: 1, thrK: 1, lastISL: math.NaN(), lastOSL: math.NaN(), lastITL: math.NaN(), accept: 1}
	var errs []error
	var mins []string
	minGPUs := 0
	for _, p := range pools {
		q := pool{Pool: p, lastUpMs: math.NaN(), k: math.NaN(), readyMs: math.NaN()}
		field := "planner.min_workers"
		switch p.Name {
		case "aggregated":
			q.role = aggregated
		case "prefill":
			q.role, field = prefill, "planner.prefill_min_workers"
		case "decode":
			q.role, field = decode, "planner.decode_min_workers"
		default:
			errs = append(errs, fmt.Errorf("planner: pool %q: must be aggregated, prefill or decode", p.Name))
			continue
		}
		if p.GPUsPerWorker < 1 {
			errs = append(errs, fmt.Errorf("planner: pool %s: GPUs per worker must be ≥ 1, got %d", p.Name, p.GPUsPerWorker))
			continue
		}
		if p.MinWorkers < 0 {
			errs = append(errs, fmt.Errorf("%s: must be ≥ 0, got %d", field, p.MinWorkers))
		}
		if p.MaxBatchedTokens < 0 || p.MaxSeqs < 0 || p.KVTokens < 0 {
			errs = append(errs, fmt.Errorf("planner: pool %s: max batched tokens, max sequences and KV tokens must be ≥ 0", p.Name))
		}
		if cfg.Throughput && p.Model == nil {
			errs = append(errs, fmt.Errorf("planner: pool %s: throughput-based scaling needs the pool's timing model", p.Name))
		}
		q.min = max(p.MinWorkers, 1)
		q.maxW = cfg.MaxGPUs / p.GPUsPerWorker
		// The exact product and sum, saturating rather than wrapping: the
		// message shows the arithmetic (issue 29 item 11: clamping each
		// factor to max_num_gpus + 1 printed "10 × 1 = 2").
		minGPUs = satAdd(minGPUs, satMul(q.min, p.GPUsPerWorker))
		mins = append(mins, fmt.Sprintf("%s %d × %d", p.Name, q.min, p.GPUsPerWorker))
		pl.pools = append(pl.pools, q)
	}
	if len(errs) == 0 && minGPUs > cfg.MaxGPUs {
		total := strconv.Itoa(minGPUs)
		if minGPUs == math.MaxInt {
			total = "over " + strconv.Itoa(math.MaxInt)
		}
		errs = append(errs, fmt.Errorf("planner.max_num_gpus: %d GPUs cannot hold the pools' minimum workers (%s = %s GPUs)",
			cfg.MaxGPUs, strings.Join(mins, " + "), total))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Load {
		pl.loadMs = cfg.LoadIntervalS * 1000
	}
	if cfg.Throughput {
		pl.thrMs = cfg.ThroughputIntervalS * 1000
		pl.rate, pl.isl, pl.osl = newPredictor(&cfg), newPredictor(&cfg), newPredictor(&cfg)
	}
	return pl, nil
}

// FirstMs is the first tick time: the smallest enabled interval, in ms
// (NaN when both modes are off: no ticks).
func (pl *Planner) FirstMs() float64 { return pl.nextDue() }

// nextDue is the earliest due tick of the enabled modes (NaN: none).
func (pl *Planner) nextDue() float64 {
	next := math.Inf(1)
	if pl.loadMs > 0 {
		next = min(next, float64(pl.loadK*pl.loadMs))
	}
	if pl.thrMs > 0 {
		next = min(next, float64(pl.thrK*pl.thrMs))
	}
	if math.IsInf(next, 1) {
		return math.NaN()
	}
	return next
}

// eps absorbs the loop's rounding of tick times to whole nanoseconds.
const eps = 1e-6 // ms

// due reports whether the tick k·ms is due at now, and the k after now.
func due(now, k, ms float64) (bool, float64) {
	if ms <= 0 || !(now >= float64(k*ms)-eps) {
		return false, k
	}
	return true, math.Floor((now+eps)/ms) + 1
}

// Tick runs the policies due at s.NowMs: throughput-based scaling first
// (it sets the floor), then load-based (±1 above it). The two share one
// tick stream: the next tick is the earliest due time of either.
func (pl *Planner) Tick(s Snapshot) Decision {
	nan := math.NaN()
	d := Decision{NextMs: nan, Diag: Diagnostics{EstTTFTMs: nan, EstITLMs: nan, PredRequests: nan, PredISL: nan, PredOSL: nan,
		ObservedRequests: nan, ObservedISL: nan, ObservedOSL: nan, PredRate: nan, ObservedRate: nan}}
	n := len(pl.pools)
	states := make([]PoolState, n)
	copy(states, s.Pools)
	d.Targets = make([]int, n)
	pl.now = s.NowMs
	have := make([]int, n)
	for i, st := range states {
		p := &pl.pools[i]
		have[i] = st.Active + st.Starting
		if c := [3]int{st.Active, st.Starting, st.Draining}; c != p.seen {
			if c[0] > p.seen[0] && s.Tick > 0 {
				p.readyMs, p.settleMs = s.NowMs, -1 // the next load tick fixes settleMs
			}
			p.seen, p.changedMs = c, s.NowMs
		}
		d.Targets[i] = min(max(have[i], p.min), p.maxW)
	}
	pl.observe(s.Traffic)
	if pl.cfg.Load {
		for i := range pl.pools {
			pl.ingest(&pl.pools[i], states[i], s.NowMs)
		}
	}

	var parts []string
	raised := make([]bool, n)
	thrDue, thrK := due(s.NowMs, pl.thrK, pl.thrMs)
	loadDue, loadK := due(s.NowMs, pl.loadK, pl.loadMs)
	if thrDue {
		pl.thrK = thrK
		parts = append(parts, pl.throughputTick(s.NowMs, d.Targets, raised, &d.Diag))
	}
	if loadDue {
		pl.loadK = loadK
		var lp []string
		for i := range pl.pools {
			if raised[i] {
				lp = append(lp, pl.pools[i].Name+" hold: raised to the throughput floor")
				continue
			}
			lp = append(lp, pl.loadPool(i, states[i], d.Targets, &d.Diag))
		}
		parts = append(parts, "load: "+strings.Join(lp, "; "))
	}
	if pl.fitBudget(d.Targets, slices.Clone(d.Targets)) {
		parts = append(parts, fmt.Sprintf("capped at %d GPUs", pl.cfg.MaxGPUs))
	}
	d.Diag.Floor = make([]int, n)
	d.Action = ActionHold
	for i := range pl.pools {
		d.Diag.Floor[i] = pl.pools[i].floor
		switch {
		case d.Targets[i] > have[i]:
			pl.pools[i].lastUpMs = s.NowMs
			d.Action = ActionUp
		case d.Targets[i] < have[i] && d.Action == ActionHold:
			d.Action = ActionDown
		}
	}
	switch {
	case len(parts) > 0:
		d.Reason = strings.Join(parts, "; ")
	case pl.loadMs == 0 && pl.thrMs == 0:
		d.Reason = "hold: planner disabled"
	default:
		d.Reason = "hold: no policy due"
	}
	if next := pl.nextDue(); s.Work && next > s.NowMs && !math.IsInf(s.NowMs, 0) {
		d.NextMs = next
	}
	return d
}

// observe takes the traffic of one tick: the shape for load-based
// estimates and the window throughput-based scaling predicts from.
func (pl *Planner) observe(t Traffic) {
	ok := func(v float64) bool { return v >= 0 && !math.IsInf(v, 0) } // false for NaN
	if ok(t.IntervalS) {
		pl.acc.seconds += t.IntervalS
	}
	if ok(t.MeanITLMs) && t.MeanITLMs > 0 {
		pl.lastITL = t.MeanITLMs
		if ok(t.MeanTTFTMs) && ok(t.MeanOSL) {
			pl.lagMs = t.MeanTTFTMs + t.MeanOSL*t.MeanITLMs
		}
	}
	if t.Requests > 0 {
		pl.acc.requests += t.Requests
		if ok(t.MeanISL) {
			pl.lastISL = t.MeanISL
			pl.acc.islSum += float64(float64(t.Requests) * t.MeanISL)
			pl.acc.islN += t.Requests
		}
		if ok(t.MeanOSL) {
			pl.lastOSL = t.MeanOSL
			pl.acc.oslSum += float64(float64(t.Requests) * t.MeanOSL)
			pl.acc.oslN += t.Requests
		}
	}
	if ok(t.KVHitRate) && t.KVHitRate <= 1 {
		pl.hit = t.KVHitRate
	}
	if ok(t.AcceptLength) && t.AcceptLength >= 1 {
		pl.accept = t.AcceptLength
	}
}

// throughputTick runs throughput-based scaling: feed the window to the
// predictors, convert the forecast into workers and either set the
// targets (throughput only) or the floor under load-based scaling
// (hybrid: targets below the floor rise to it, and raised marks them).
func (pl *Planner) throughputTick(now float64, targets []int, raised []bool, diag *Diagnostics) string {
	a := pl.acc
	pl.acc = traffic{}
	secs := a.seconds
	if !(secs > 0) {
		secs = (now - pl.lastThrMs) / 1000
	}
	pl.lastThrMs = now
	diag.ObservedRequests = float64(a.requests)
	if secs > 0 && !math.IsInf(secs, 0) {
		diag.ObservedRate = float64(a.requests) / secs
		pl.rate.add(diag.ObservedRate)
	}
	if a.islN > 0 {
		diag.ObservedISL = a.islSum / float64(a.islN)
		pl.isl.add(diag.ObservedISL)
	}
	if a.oslN > 0 {
		diag.ObservedOSL = a.oslSum / float64(a.oslN)
		pl.osl.add(diag.ObservedOSL)
	}
	f := forecast{hit: pl.hit, accept: pl.accept}
	var ok bool
	if f.rate, ok = pl.rate.next(); !ok {
		f.rate = 0
	}
	if f.isl, ok = pl.isl.next(); !ok {
		f.isl = 0
	}
	if f.osl, ok = pl.osl.next(); !ok {
		f.osl = 0
	}
	diag.PredRate, diag.PredISL, diag.PredOSL = f.rate, f.isl, f.osl
	diag.PredRequests = float64(f.rate * pl.cfg.ThroughputIntervalS)

	want, parts := pl.throughputWant(f)
	got := slices.Clone(want)
	capped := pl.fitBudget(got, want)
	for i := range pl.pools {
		pl.pools[i].floor = got[i]
		switch {
		case !pl.cfg.Load:
			targets[i] = got[i]
		case got[i] > targets[i]:
			targets[i], raised[i] = got[i], true
		}
	}
	head := "throughput: predicted "
	if pl.cfg.Load {
		head = "throughput floor: predicted "
	}
	r := head + strings.Join(parts, "; ")
	if capped {
		r += fmt.Sprintf(" (capped at %d GPUs: %s)", pl.cfg.MaxGPUs, counts(pl.pools, got))
	}
	return r
}

// gpus is the GPUs targets take.
func (pl *Planner) gpus(targets []int) int {
	n := 0
	for i, t := range targets {
		n += t * pl.pools[i].GPUsPerWorker
	}
	return n
}

// fitBudget fits t within max_num_gpus, sharing the shortfall fairly by
// want: each pool first gets ⌊want × budget / wanted GPUs⌋ workers (at
// least its minimum), then the pool with the most of its want (t/want)
// gives a worker back while the total is over, and the pool with the
// least gets one while one fits (ties: the earlier pool). It reports
// whether t changed.
func (pl *Planner) fitBudget(t, want []int) bool {
	if pl.gpus(t) <= pl.cfg.MaxGPUs {
		return false
	}
	var wanted float64
	for i, w := range want {
		wanted += float64(w * pl.pools[i].GPUsPerWorker)
	}
	share := float64(pl.cfg.MaxGPUs) / wanted
	for i, w := range want {
		t[i] = max(int(float64(w)*share), pl.pools[i].min)
	}
	ratio := func(i int) float64 { return float64(t[i]) / float64(max(want[i], 1)) }
	for pl.gpus(t) > pl.cfg.MaxGPUs {
		best := -1
		for i := range t {
			if t[i] > pl.pools[i].min && (best < 0 || ratio(i) > ratio(best)) {
				best = i
			}
		}
		if best < 0 {
			break // the minimums alone: New keeps them within the budget
		}
		t[best]--
	}
	for {
		best := -1
		for i := range t {
			if t[i] < want[i] && pl.gpus(t)+pl.pools[i].GPUsPerWorker <= pl.cfg.MaxGPUs && (best < 0 || ratio(i) < ratio(best)) {
				best = i
			}
		}
		if best < 0 {
			return true
		}
		t[best]++
	}
}

// counts formats per-pool worker counts.
func counts(pools []pool, t []int) string {
	parts := make([]string, len(t))
	for i, n := range t {
		parts[i] = fmt.Sprintf("%s %d", pools[i].Name, n)
	}
	return strings.Join(parts, ", ")
}

// num formats v for a reason: integers with thousands separators from
// 100 up, three significant digits below.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.IsInf(v, 0):
		return "∞"
	case math.Abs(v) < 100:
		return strconv.FormatFloat(v, 'g', 3, 64)
	case math.Abs(v) >= 1e15:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return metrics.Format(math.Round(v)) // the report's thousands separators
}

// satMul is a × b for a, b ≥ 0, math.MaxInt when it would overflow.
func satMul(a, b int) int {
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}

// satAdd is a + b for a, b ≥ 0, math.MaxInt when it would overflow.
func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
