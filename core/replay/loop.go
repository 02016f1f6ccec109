// Package replay is the cluster's event loop: arrival sources release a
// workload's requests, a router policy places them on the workers of named
// pools, engine workers step as passes ordered on a typed event queue, and
// observers (the report collector, progress) watch without changing state.
// The loop owns the virtual clock and mints request ids; RunUntil steps it
// to a given time, so an offline run and a wall-clock driver step the same
// code. Pass results, KV events included, become visible at the pass end.
// docs/architecture.md describes the contracts.
package replay

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/router"
	"github.com/dynosim/dynosim-web/core/workload"
	"github.com/dynosim/dynosim-web/timing"
)

// Pool is a named set of workers behind one placement policy.
type Pool struct {
	Name    string // aggregated | prefill | decode
	Workers []*engine.Worker
	Router  router.Policy
	GPUs    int // per worker
}

// ErrCanceled is returned when Progress asks to stop.
var ErrCanceled = errors.New("canceled")

// ErrTooLarge is returned when a run passes Options.MaxPasses,
// MaxPromptTokens or MaxOutputTokens.
var ErrTooLarge = errors.New("run too large")

// Run replays wl on pools to the end and returns the report.
func Run(wl *workload.Workload, pools []Pool, opt Options) (*report.Report, error) {
	l, err := New(wl, pools, opt)
	if err != nil {
		return nil, err
	}
	if _, err := l.RunUntil(math.MaxInt64); err != nil {
		return nil, err
	}
	return l.Report()
}

// wstate is the loop's state of one worker.
type wstate struct {
	pool  int
	index int // within its pool
	held  int // requests submitted and not yet terminal
	// lanes are the worker's pass clocks (engine.Worker lanes): one for a
	// lock-step worker, one per rank for independent ranks.
	lanes []lane
	stats report.WorkerStats
	// seen is the load the router may see: the worker's state as of its
	// last pass end, plus the requests placed on it since. A busy worker's
	// engine already holds the in-flight pass's decisions (requests it
	// will complete), which must not be visible before the pass ends.
	seen  router.Load
	since int // requests placed since the in-flight pass started
	// deferred are requests placed while a pass was in flight under
	// Options.AsyncScheduling: the engine sees them after its next pass
	// starts (that pass was planned while this one ran).
	deferred []deferred
	// The planner's lifecycle (scale.go): the state, and when the worker
	// was added and removed.
	state       wstatus
	added, gone timing.Time
}

// lane is the loop's state of one of a worker's pass clocks.
type lane struct {
	busy     bool // a pass is in flight
	early    bool // its in-flight pass was stepped ahead and ends at its start (ahead.go)
	stalled  bool // its last pass did nothing: wait for new work
	inflight *engine.Pass
	load     router.Load // as of its last pass end (workers of several lanes)
}

// busy reports whether any lane of the worker has a pass in flight.
func (st *wstate) busy() bool {
	for i := range st.lanes {
		if st.lanes[i].busy {
			return true
		}
	}
	return false
}

// deferred is a placed request not yet submitted to its rank.
type deferred struct {
	id   uint64
	rank int
}

// Loop is the cluster event loop of one replay.
//
// It owns one request table (table.go), hands each pool's work to the
// pool's role (role.go, disagg.go) and emits every fact once to its
// observers (observe.go): the report collector, the planner's traffic
// window, Options.Observer and progress. They never change its state.
type Loop struct {
	wl    *workload.Workload
	pools []poolState
	opt   Options

	now     timing.Time
	q       queue
	arr     *arrivals
	ws      []wstate         // every worker of every pool, pool by pool
	workers []*engine.Worker // the same, flat
	reqs    table
	waiting []uint64 // ids of the requests the router holds, in arrival order
	aborts  []uint64 // live: aborts waiting for a pass to end (live.go)

	col  *report.Collector // the report's; also the first of obs
	obs  observers
	prog *progress   // Options.Progress; nil: none
	dis  *disagg     // disaggregated: the handoff; nil: aggregated
	sc   *scaleState // the planner in the loop; nil: static pools

	released, total int
	passes          int
	budget          budget         // Options.Max*Tokens
	scratch         []uint32       // promptOf's buffer: no prompt allocation per placement
	hashed          promptHashes   // the placing router's hashes of the prompt being submitted (place)
	rreq            router.Request // reused: a router's argument escapes
	done            bool
	stop            string         // why the run ended: drained | max_virtual_time
	pins            map[uint64]int // live: requests sent to one worker, bypassing the router (SubmitTo)

	// Stepping ahead (ahead.go): the settle iteration at iterAt, the
	// virtual clock's limit in RunUntil, and what never changes in a run.
	iter     uint32
	iterAt   timing.Time
	limit    timing.Time
	aheadOK  bool
	minDelay timing.Time // the shortest follow-up turn delay
}

// poolState is a pool with its workers' global indices in Loop.ws (the
// initial ones pool by pool, the planner's appended); it is the router's
// read-only View of the pool, indexed by slot, which never moves.
type poolState struct {
	Pool
	l       *Loop
	role    role
	kind    Role  // role.kind(), read once per pass end
	members []int // slot → global worker index
}

func (p *poolState) Workers() int           { return len(p.Pool.Workers) }
func (p *poolState) Ranks(w int) int        { return len(p.Pool.Workers[w].Ranks) }
func (p *poolState) Load(w int) router.Load { return p.l.ws[p.members[w]].seen }
func (p *poolState) Routable(w int) bool    { return p.l.ws[p.members[w]].state == active }

// New returns a loop at virtual time 0. Requests enter the first pool.
func New(wl *workload.Workload, pools []Pool, opt Options) (*Loop, error) {
	if len(pools) == 0 || len(pools[0].Workers) == 0 {
		return nil, fmt.Errorf("replay: no workers")
	}
	if opt.Live {
		wl = &workload.Workload{TraceBlock: 1} // Submit's prompts are token ids
	}
	l := &Loop{wl: wl, opt: opt, arr: newArrivals(wl, opt.Load, opt.Seed),
		budget: budget{maxPrompt: opt.MaxPromptTokens, maxOutput: opt.MaxOutputTokens}}
	if opt.Transfer != nil {
		if len(pools) != 2 || len(pools[decodePool].Workers) == 0 {
			return nil, fmt.Errorf("replay: a disaggregated replay needs a prefill and a decode pool")
		}
		l.dis = &disagg{l: l, t: opt.Transfer}
	}
	l.total = wl.Requests()
	if opt.MaxRequests > 0 {
		l.total = min(l.total, opt.MaxRequests)
	}
	for i, p := range pools {
		p.Workers = slices.Clone(p.Workers) // the planner appends to its own copy
		l.pools = append(l.pools, poolState{Pool: p, l: l, role: roleOf(i, l.dis)})
		l.pools[i].kind = l.pools[i].role.kind()
		for w, wk := range p.Workers {
			l.pools[i].members = append(l.pools[i].members, len(l.ws))
			l.ws = append(l.ws, newWstate(i, w, wk))
			l.workers = append(l.workers, wk)
		}
	}
	for i := range l.pools {
		for w := range l.pools[i].Pool.Workers {
			l.pools[i].Router.Added(w)
		}
	}
	if l.total == wl.Requests() && (opt.MaxPromptTokens > 0 || opt.MaxOutputTokens > 0) {
		// Every request runs: refuse an over-cap workload before any work.
		var in, out int
		for i := range wl.Sessions {
			for j := range wl.Sessions[i].Turns {
				t := &wl.Sessions[i].Turns[j]
				in, out = in+t.Input, out+t.Output
			}
		}
		if err := l.budget.check(in, out); err != nil {
			return nil, err
		}
	}
	l.col = report.NewCollector(l.total, len(l.ws), opt.Capture)
	l.col.Watch(opt.Watch)
	l.col.Frontend = opt.Frontend
	l.col.Onboarding = opt.Tiers
	l.col.Warmup = opt.Warmup
	l.obs.col = collect{l.col}
	if err := l.startScaling(opt.Scaling); err != nil { // the planner's window observes next
		return nil, err
	}
	if opt.Observer != nil {
		l.obs.attach(opt.Observer, hearAll)
	}
	if opt.Progress != nil {
		l.prog = &progress{fn: opt.Progress, total: l.total}
		l.obs.attach(l.prog, 0)
	}
	l.reqs.recs = make([]request, 0, l.total)
	l.initAhead()
	return l, nil
}

// newWstate is the state of worker w of pool i.
func newWstate(i, w int, wk *engine.Worker) wstate {
	return wstate{pool: i, index: w, seen: routerLoad(wk), lanes: make([]lane, wk.Lanes())}
}

// Now is the virtual clock.
func (l *Loop) Now() timing.Time { return l.now }

// RunUntil applies every event due at or before limit and returns whether
// the run is over (nothing left to do, or past Options.MaxTime). It may be
// called again with a later limit; the clock never passes limit.
func (l *Loop) RunUntil(limit timing.Time) (done bool, err error) {
	l.limit = limit
	for !l.done {
		if err := l.settle(); err != nil {
			return false, err
		}
		if l.prog != nil && l.prog.poll(l.now) {
			return false, ErrCanceled
		}
		next, ok := l.next()
		if ok && next >= timing.Horizon {
			return false, l.horizonErr()
		}
		if l.opt.Live && (!ok || next > limit) {
			l.now = max(l.now, limit) // what Submit releases arrives then
			return false, nil
		}
		if !ok || l.opt.MaxTime > 0 && next > l.opt.MaxTime {
			l.done, l.stop = true, "drained"
			if ok {
				l.stop = "max_virtual_time"
			}
			break
		}
		if next > limit {
			return false, nil
		}
		l.now = next
	}
	return true, nil
}

// ErrHorizon is returned when the virtual clock would pass timing.Horizon.
var ErrHorizon = errors.New("the virtual clock would pass its horizon of 100 years")

// horizonErr names what would pass the horizon: a pass (its timing), a
// KV transfer (its bandwidth) or an arrival (the load's times or rates).
// Issue 29 item 12: a transfer past the horizon used to blame the
// arrivals.
func (l *Loop) horizonErr() error {
	if l.q.len() > 0 && l.q.top().at >= timing.Horizon {
		switch e := l.q.top(); e.kind {
		case PassEnd:
			return fmt.Errorf("replay: %w: a pass of worker %d would end past it (check the timing model's values, timing.speedup and the KV tiers' bandwidths)", ErrHorizon, e.worker)
		case TransferDone:
			return fmt.Errorf("replay: %w: the KV transfer of request %d would end past it: engine.kv_transfer.bandwidth_gb_per_second is too low for its bytes (check it and engine.kv_transfer.bytes_per_token)", ErrHorizon, e.req)
		}
	}
	return fmt.Errorf("replay: %w: an arrival would come past it (check the trace's times and delays, traffic.load.speedup and the request rate)", ErrHorizon)
}

// next is the time of the next event or first-turn arrival.
func (l *Loop) next() (timing.Time, bool) {
	t, ok := timing.Time(0), false
	if l.q.len() > 0 {
		t, ok = l.q.top().at, true
	}
	if l.releasable() {
		if s, sok := l.arr.peek(l.now); sok && (!ok || s < t) {
			t, ok = s, true
		}
	}
	return t, ok
}

func (l *Loop) releasable() bool { return l.opt.MaxRequests == 0 || l.released < l.opt.MaxRequests }

// Report builds the report of a finished run. A run that ended with
// requests no pass can ever schedule is an error.
func (l *Loop) Report() (*report.Report, error) {
	if l.opt.MaxTime == 0 {
		for i := range l.ws {
			if w := l.workers[i]; !w.Empty() {
				m := w.Metrics()
				return nil, fmt.Errorf("replay: worker %d cannot make progress with %d requests left (a request that can never be scheduled)", i, m.Running+m.Waiting)
			}
		}
	}
	stats := make([]report.WorkerStats, len(l.ws))
	for i := range l.ws {
		stats[i] = l.ws[i].stats
		stats[i].Worker = i
		stats[i].Pool = l.pools[l.ws[i].pool].Name
		if l.sc != nil {
			l.sc.provisioned(&stats[i], i)
		}
		m := l.workers[i].Metrics()
		stats[i].Preemptions = m.Preemptions
		stats[i].TotalBlocks = m.TotalBlocks
		stats[i].Retractions = m.Retractions
		stats[i].CacheHitTokens, stats[i].CacheTokens = m.CacheHitTokens, m.CacheTotalTokens
		stats[i].AcceptedTokens, stats[i].DecodeForwards = m.AcceptedTokens, m.DecodeForwards
	}
	info := report.RunInfo{Workers: stats, ClockEnd: l.now, SLA: l.opt.SLA, StopReason: l.stop}
	if l.sc != nil {
		info.Planner = &l.sc.report
	}
	for _, p := range l.pools {
		info.Pools = append(info.Pools, report.PoolInfo{Name: p.Name, Workers: p.Workers(), GPUsPerWorker: p.GPUs})
	}
	if l.dis != nil {
		info.Transfer = l.dis.t.info()
	}
	rep := report.Build(l.col, info)
	var err error
	if rep.Timeline, err = l.col.Timeline(info.Pools); err != nil {
		return nil, err
	}
	return rep, nil
}

// settle applies everything due at l.now until nothing changes, in the
// order of Kind: due pass ends, then held and arriving requests, then new
// passes on idle workers (a pass that ends at once is applied at once).
func (l *Loop) settle() error {
	for {
		changed := false
		if l.iterAt != l.now {
			l.iter, l.iterAt = 0, l.now
		}
		l.iter++
		for l.q.len() > 0 && l.q.top().at <= l.now && l.q.top().kind < Arrival {
			e := l.q.pop()
			var err error
			switch e.kind {
			case PassEnd:
				if l.ws[e.worker].lanes[e.lane].early {
					break // its pass is applied where it was started (ahead.go)
				}
				err = l.apply(int(e.worker), int(e.lane))
			case TransferDone:
				err = l.dis.transferDone(e.req)
			case Dispatch:
				err = l.dispatch(e.req)
			case WorkerReady:
				l.sc.ready(int(e.worker)) // only a planner adds workers
			default:
				err = fmt.Errorf("replay: event kind %d has no handler", e.kind)
			}
			if err != nil {
				return err
			}
			changed = true
		}
		if len(l.waiting) > 0 {
			n, err := l.placeHeld()
			if err != nil {
				return err
			}
			changed = changed || n > 0
		}
		for {
			ok, err := l.releaseDue()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			changed = true
		}
		for i := range l.ws {
			if l.ws[i].held == 0 {
				continue
			}
			for k := range l.ws[i].lanes {
				ln := &l.ws[i].lanes[k]
				if ln.early && ln.inflight.Start <= l.now {
					if err := l.applyEarly(i, k); err != nil {
						return err
					}
					changed = true
					continue
				}
				if ln.busy || ln.stalled {
					continue
				}
				c, err := l.startPass(i, k)
				if err != nil {
					return err
				}
				changed = changed || c
			}
		}
		if l.q.len() > 0 && l.q.top().at <= l.now && l.q.top().kind > Arrival && !l.tickDue() {
			return fmt.Errorf("replay: event kind %d has no handler", l.q.top().kind)
		}
		if !changed {
			if !l.tickDue() {
				return nil
			}
			// The planner ticks after same-time settlement, and what it
			// changes settles again.
			if err := l.sc.tick(); err != nil {
				return err
			}
		}
	}
}

// startPass starts a pass on lane k of worker i, idle and holding work,
// and reports whether that changed anything at l.now.
func (l *Loop) startPass(i, k int) (bool, error) {
	st := &l.ws[i]
	ln := &st.lanes[k]
	if err := l.passBudget(); err != nil {
		return false, err
	}
	wk := l.workers[i]
	p := l.step(i, k, l.now)
	st.since = 0
	submitted := false
	keep := st.deferred[:0]
	for _, d := range st.deferred { // the next pass of their lane may take them
		if wk.LaneOf(d.rank) != k {
			keep = append(keep, d)
			continue
		}
		if err := l.submit(i, d.rank, d.id, l.promptOf(l.reqs.at(d.id))); err != nil {
			return false, err
		}
		submitted = true
	}
	st.deferred = keep
	changed := false
	if len(p.Reserved) > 0 {
		// Reservations are decisions of the pass start: the handoff goes
		// on now, not at the pass end.
		if err := l.dis.reserved(p.Reserved); err != nil {
			return false, err
		}
		changed = true
	}
	if p.End > l.now {
		if !submitted && quiet(p) {
			if e := l.aheadLimit(i); p.End < e {
				return changed, l.runAhead(i, k, e)
			}
		}
		l.q.push(event{at: p.End, kind: PassEnd, worker: int32(i), lane: int32(k), started: l.now, iter: l.iter})
		return changed, nil
	}
	if !p.Busy && !submitted {
		ln.stalled = true // nothing can change until new work arrives
	}
	if err := l.apply(i, k); err != nil {
		return false, err
	}
	return changed || p.Busy || submitted, nil
}

// apply makes the finished pass of worker i's lane k visible: KV events
// to its router, its admissions, the pass itself, then its signals in
// order, which the pool's role handles.
func (l *Loop) apply(i, k int) error {
	st := &l.ws[i]
	ln := &st.lanes[k]
	p := ln.inflight
	ln.busy, ln.inflight = false, nil
	m := p.Metrics
	ln.load = router.Load{Running: m.Running, Waiting: m.Waiting, ActiveBlocks: m.ActiveBlocks, TotalBlocks: m.TotalBlocks}
	if len(st.lanes) == 1 {
		st.seen = ln.load
	} else {
		// What the router may see of the other lanes is their last pass end.
		st.seen = router.Load{}
		for _, o := range st.lanes {
			st.seen.Running += o.load.Running
			st.seen.Waiting += o.load.Waiting
			st.seen.ActiveBlocks += o.load.ActiveBlocks
			st.seen.TotalBlocks += o.load.TotalBlocks
		}
		st.stats.PeakActiveBlock = max(st.stats.PeakActiveBlock, st.seen.ActiveBlocks)
	}
	st.seen.Waiting += st.since
	pool := &l.pools[st.pool]
	if len(p.Events) > 0 {
		pool.Router.Observe(st.index, p.Events)
	}
	kind := pool.kind
	for _, a := range p.Admissions {
		if a.Parked {
			l.obs.Parked(a.ID, p.Start)
			continue
		}
		l.obs.Admitted(a.ID, kind, p.Start, a.Reused, a.Again)
	}
	l.obs.col.PassEnded(i, p)
	if len(l.obs.passes) > 0 {
		l.obs.passEnded(i, p)
	}
	if err := pool.role.signals(l, i, p); err != nil {
		return err
	}
	if st.state == draining { // only a planner drains workers
		l.sc.retireIfDone(i)
	}
	if len(l.aborts) > 0 {
		l.retryAborts(i)
	}
	return nil
}

// terminal ends request id: completed if why is "", else rejected. Its
// session's next turn follows offline; a live loop forgets what it can.
func (l *Loop) terminal(id uint64, why string) {
	r := l.reqs.at(id)
	r.over = true
	l.obs.Terminal(id, l.now, why)
	if l.opt.Live {
		l.forget()
		return
	}
	l.finished(r)
}
