// Package replay is the virtual-time driver: it releases a workload's
// requests to a router, steps engine workers as an event loop ordered by
// (time, sequence), and feeds every pass's outputs to the metrics collector.
// Pass results become visible at the pass end.
package replay

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/workload"
	"github.com/dynosim/dynosim-web/internal/detmath"
	"github.com/dynosim/dynosim-web/timing"
)

// LoadKind selects how requests arrive.
type LoadKind uint8

const (
	TraceTimestamps LoadKind = iota // sessions start at their trace times
	Concurrency                     // closed loop: at most N sessions in flight
	Poisson                         // exponential gaps at a rate
	ConstantRate                    // fixed gaps
)

// Load configures arrivals.
type Load struct {
	Kind        LoadKind
	Concurrency int
	RatePerSec  float64 // Poisson, ConstantRate (0: burst)
}

// Options configure one replay.
type Options struct {
	Load        Load
	MaxRequests int         // stop dispatching after this many (0: all)
	MaxTime     timing.Time // soft cap on the virtual clock (0: none)
	MaxPasses   int         // error past this many engine passes (0: none)
	Seed        uint64
	Progress    func(simMs float64, done, total int) bool
	Capture     bool
	SLA         report.SLA
	GPUs        int // per worker, for GPU-hours
}

// Router places a request on a worker and rank.
type Router interface {
	Route(input int) (worker, rank int)
}

// ErrCanceled is returned when Progress asks to stop.
var ErrCanceled = errors.New("canceled")

// ErrTooLarge is returned when a run passes Options.MaxPasses.
var ErrTooLarge = errors.New("run too large")

// RoundRobin cycles over workers; each worker cycles over its ranks.
type RoundRobin struct {
	cursor int
	ranks  []int
	next   []int
}

// NewRoundRobin returns a round-robin router over workers of ranks ranks each.
func NewRoundRobin(workers, ranks int) *RoundRobin {
	r := &RoundRobin{ranks: make([]int, workers), next: make([]int, workers)}
	for i := range r.ranks {
		r.ranks[i] = ranks
	}
	return r
}

// Route implements Router.
func (r *RoundRobin) Route(int) (int, int) {
	w := r.cursor % len(r.ranks)
	r.cursor = w + 1
	return w, r.rank(w)
}

func (r *RoundRobin) rank(w int) int {
	k := r.next[w] % r.ranks[w]
	r.next[w] = k + 1
	return k
}

// Random picks a worker uniformly from a seeded stream; ranks rotate.
type Random struct {
	RoundRobin
	rng *rand.Rand
}

// NewRandom returns a seeded random router.
func NewRandom(workers, ranks int, seed uint64) *Random {
	return &Random{RoundRobin: *NewRoundRobin(workers, ranks), rng: rand.New(rand.NewPCG(seed, 0x726f75746572))} // "router"
}

// Route implements Router.
func (r *Random) Route(int) (int, int) {
	w := r.rng.IntN(len(r.ranks))
	return w, r.rank(w)
}

// Run replays wl on workers.
func Run(wl *workload.Workload, workers []*engine.Worker, router Router, opt Options) (*report.Report, error) {
	d := &driver{wl: wl, workers: workers, router: router, opt: opt}
	return d.run()
}

type wstate struct {
	busy     bool
	stalled  bool
	held     int // requests submitted and not yet terminal
	inflight *engine.Pass
	stats    report.WorkerStats
}

// event is a timed entry of the driver's queues: a worker's pass completion,
// or a follow-up turn becoming ready.
type event struct {
	at            timing.Time
	seq           uint64
	worker        int
	session, turn int
}

// eventHeap is a binary min-heap ordered by (at, seq): ties never depend on
// anything but insertion order. Concrete (no closures, no interfaces) so
// the hot loop stays cheap, in wasm especially.
type eventHeap []event

func (h eventHeap) less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}

func (h *eventHeap) push(x event) {
	*h = append(*h, x)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	q := *h
	x := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return x
}

type reqInfo struct {
	session, turn int32
}

type driver struct {
	wl      *workload.Workload
	workers []*engine.Worker
	router  Router
	opt     Options

	now      timing.Time
	seq      uint64
	events   eventHeap // pass completions
	follow   eventHeap // follow-up turns
	ws       []wstate
	col      *report.Collector
	reqs     []reqInfo // by request id - 1
	next     int       // next session to start
	nextAt   timing.Time
	inflight int // sessions in flight (concurrency mode)
	released int // requests dispatched
	passes   int
	rng      *rand.Rand
	prompt   []uint32
	total    int
}

func (d *driver) run() (*report.Report, error) {
	d.total = d.wl.Requests()
	if d.opt.MaxRequests > 0 {
		d.total = min(d.total, d.opt.MaxRequests)
	}
	d.ws = make([]wstate, len(d.workers))
	d.col = report.NewCollector(d.total, len(d.workers), d.opt.Capture)
	d.rng = rand.New(rand.NewPCG(d.opt.Seed, 0x776f726b6c6f6164)) // "workload"
	d.nextAt = d.firstStart()
	for k := 0; ; k++ {
		if err := d.settle(); err != nil {
			return nil, err
		}
		if d.opt.Progress != nil && k%256 == 0 && !d.opt.Progress(d.now.Ms(), d.col.Done(), d.total) {
			return nil, ErrCanceled
		}
		next := timing.Time(math.MaxInt64)
		if len(d.events) > 0 {
			next = d.events[0].at
		}
		if t, ok := d.nextArrival(); ok {
			next = min(next, t)
		}
		if next == math.MaxInt64 {
			break
		}
		if d.opt.MaxTime > 0 && next > d.opt.MaxTime {
			break
		}
		d.now = next
	}
	if d.opt.MaxTime == 0 {
		for i, w := range d.workers {
			if !w.Empty() {
				return nil, fmt.Errorf("replay: worker %d cannot make progress with %d requests left (a request that can never be scheduled)", i, w.Metrics().Running+w.Metrics().Waiting)
			}
		}
	}
	stats := make([]report.WorkerStats, len(d.ws))
	for i := range d.ws {
		stats[i] = d.ws[i].stats
		stats[i].Worker = i
		m := d.workers[i].Metrics()
		stats[i].Preemptions = m.Preemptions
		stats[i].TotalBlocks = m.TotalBlocks
		stats[i].Retractions = m.Retractions
		stats[i].CacheHitTokens, stats[i].CacheTokens = m.CacheHitTokens, m.CacheTotalTokens
		stats[i].AcceptedTokens, stats[i].DecodeForwards = m.AcceptedTokens, m.DecodeForwards
	}
	return report.Build(d.col, report.RunInfo{
		Workers: stats, GPUsPerWorker: d.opt.GPUs, ClockEnd: d.now, SLA: d.opt.SLA,
	}), nil
}

// settle applies everything due at d.now until nothing changes: due pass
// completions, then arrivals, then new passes on idle workers (a pass that
// ends at once is applied at once).
func (d *driver) settle() error {
	for {
		changed := false
		for len(d.events) > 0 && d.events[0].at <= d.now {
			c := d.events.pop()
			d.apply(c.worker)
			changed = true
		}
		for {
			t, ok := d.nextArrival()
			if !ok || t > d.now {
				break
			}
			if err := d.release(); err != nil {
				return err
			}
			changed = true
		}
		for i, w := range d.workers {
			st := &d.ws[i]
			if st.busy || st.stalled || st.held == 0 {
				continue
			}
			if d.opt.MaxPasses > 0 && d.passes >= d.opt.MaxPasses {
				return fmt.Errorf("%w: more than %d engine passes (use the CLI or the page for large runs)", ErrTooLarge, d.opt.MaxPasses)
			}
			d.passes++
			p := w.Step(d.now)
			if m := p.Metrics; m.TotalBlocks > 0 {
				// The load right after the pass's scheduling decisions.
				d.col.Series.Sample(i, d.now, m.Running, m.Waiting, float64(m.ActiveBlocks)/float64(m.TotalBlocks))
			}
			st.stats.Passes++
			st.stats.BusyMs += (p.End - p.Start).Ms()
			st.stats.PeakActiveBlock = max(st.stats.PeakActiveBlock, p.Metrics.ActiveBlocks)
			st.inflight = p
			st.busy = true
			if p.End == d.now {
				if !p.Busy {
					st.stalled = true // nothing can change until new work arrives
				}
				d.apply(i)
				changed = changed || p.Busy
				continue
			}
			d.seq++
			d.events.push(event{at: p.End, seq: d.seq, worker: i})
		}
		if !changed {
			return nil
		}
	}
}

// apply makes a worker's finished pass visible.
func (d *driver) apply(w int) {
	st := &d.ws[w]
	p := st.inflight
	st.busy, st.inflight = false, nil
	for _, a := range p.Admissions {
		d.col.Admit(a.ID, p.Start, a.Reused)
	}
	for _, s := range p.Signals {
		if s.HasToken {
			d.col.Token(s.ID, p.End)
			st.stats.OutputTokens++
		}
		if s.Completed {
			st.held--
			d.col.Terminal(s.ID, d.now, s.Rejected)
			d.finished(s.ID)
		}
	}
}

// finished schedules the session's next turn, or frees its slot.
func (d *driver) finished(id uint64) {
	ri := d.reqs[id-1]
	s := &d.wl.Sessions[ri.session]
	if next := int(ri.turn) + 1; next < len(s.Turns) {
		d.seq++
		d.follow.push(event{at: d.now + s.Turns[next].Delay, seq: d.seq, session: int(ri.session), turn: next})
		return
	}
	d.inflight--
}

// firstStart is the arrival time of the next session to start.
func (d *driver) firstStart() timing.Time {
	if d.next >= len(d.wl.Sessions) {
		return 0
	}
	switch d.opt.Load.Kind {
	case TraceTimestamps:
		return d.wl.Sessions[d.next].Start
	case Poisson, ConstantRate:
		if d.next == 0 || d.opt.Load.RatePerSec <= 0 {
			return d.nextAt
		}
		mean := 1000 / d.opt.Load.RatePerSec
		gap := mean
		if d.opt.Load.Kind == Poisson {
			gap = float64(-mean * detmath.Log(1-d.rng.Float64())) // u in (0,1]
		}
		return d.nextAt + timing.FromMs(gap)
	}
	return d.now
}

// nextArrival returns the time of the next request ready to dispatch.
func (d *driver) nextArrival() (timing.Time, bool) {
	if d.opt.MaxRequests > 0 && d.released >= d.opt.MaxRequests {
		return 0, false
	}
	t, ok := timing.Time(0), false
	if len(d.follow) > 0 {
		t, ok = d.follow[0].at, true
	}
	if d.next < len(d.wl.Sessions) {
		start := d.nextAt
		if d.opt.Load.Kind == Concurrency {
			if d.inflight >= d.opt.Load.Concurrency {
				return t, ok
			}
			start = d.now
		}
		if !ok || start < t {
			t, ok = start, true
		}
	}
	return t, ok
}

// release dispatches the next ready request.
func (d *driver) release() error {
	var si, ti int
	var at timing.Time
	if len(d.follow) > 0 && (d.next >= len(d.wl.Sessions) || d.follow[0].at <= d.startTime()) {
		p := d.follow.pop()
		si, ti, at = p.session, p.turn, p.at
	} else {
		si, ti, at = d.next, 0, d.startTime()
		d.next++
		d.inflight++
		d.nextAt = at
		d.nextAt = d.firstStart()
	}
	d.released++
	t := &d.wl.Sessions[si].Turns[ti]
	w, rank := d.router.Route(t.Input)
	id := d.col.Arrive(at, t.Input, t.Output, w)
	d.reqs = append(d.reqs, reqInfo{session: int32(si), turn: int32(ti)})
	d.prompt = d.wl.Prompt(d.prompt[:0], t)
	err := d.workers[w].Ranks[rank].Submit(engine.Request{ID: id, Prompt: d.prompt, MaxOutput: t.Output, Planned: t.Planned})
	if err != nil {
		return err
	}
	d.ws[w].stalled = false
	d.ws[w].held++
	d.ws[w].stats.Requests++
	return nil
}

func (d *driver) startTime() timing.Time {
	if d.opt.Load.Kind == Concurrency {
		return d.now
	}
	return d.nextAt
}
