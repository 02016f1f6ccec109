package replay

import (
	"fmt"
	"math"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/planner"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/router"
	"github.com/dynosim/dynosim-web/timing"
)

// The planner in the loop (spec §9.1): scaling ticks are events; at each
// the planner sees a settled snapshot and returns the workers it wants per
// pool. A new worker (a new id, a cold engine) is routable after its
// pool's startup time; scale-down cancels pending startups first (highest
// ids), then drains the highest-id active workers, which take no new
// requests and leave once empty. Worker indices within a pool never move
// (router.View): a worker that left keeps its slot, not routable.

// Scaling puts a planner in the loop (Options.Scaling).
type Scaling struct {
	// Tick is the planner (core/planner's Planner.Tick): it sees a
	// snapshot and returns targets per pool and its next tick; FirstMs is
	// its first tick.
	Tick    func(planner.Snapshot) planner.Decision
	FirstMs float64
	// Per pool, in Pool order: how long a new worker takes to become
	// routable, and how to build one (id is its global worker index, for
	// its seed).
	Startup []timing.Time
	New     []func(id int) (*engine.Worker, error)
}

// wstatus is a worker's place in the planner's lifecycle.
type wstatus uint8

const (
	active   wstatus = iota // routable
	starting                // provisioned, not routable until WorkerReady
	draining                // finishing its requests, taking no new ones
	removed                 // gone (or never ready): not provisioned
)

// scaleState is the planner in the loop: at its ticks it scales the
// loop's pools; between them, as an Observer (window.go), it gathers the
// traffic and passes its next snapshot needs, reading the loop only.
type scaleState struct {
	NopObserver
	l       *Loop // the loop it scales
	cfg     *Scaling
	ticks   int
	passes  [][]planner.PassSample // per pool, since the last tick
	traffic trafficWindow
	report  report.PlannerReport
	// Quiet ticks: a tick that saw no pass end, arrival or startup since
	// the one before and changed nothing is quiet; after quietTicks of
	// them in a row the next tick waits for the next such event. Without
	// it a pass of years (a hostile timing model) or a long gap between
	// arrivals would tick billions of times, every snapshot the same.
	activity, lastActivity uint64
	quiet                  int
	fpm                    []engine.FPM // per worker: its last pass's
}

const quietTicks = 3

// tickDue reports whether a planner tick is due now and nothing else is.
func (l *Loop) tickDue() bool {
	return l.sc != nil && l.q.len() > 0 && l.q.top().kind == PlannerTick && l.q.top().at <= l.now
}

// tick runs one planner tick at l.now and applies its decision.
func (s *scaleState) tick() error {
	l := s.l
	l.q.pop()
	snap := planner.Snapshot{Tick: s.ticks, NowMs: l.now.Ms(), Work: l.opt.Live || l.col.Done() < l.total}
	for k := range l.pools {
		snap.Pools = append(snap.Pools, s.poolSnapshot(k))
		s.passes[k] = s.passes[k][:0]
	}
	snap.Traffic = s.traffic.done(l.now)
	s.traffic = trafficWindow{since: l.now}
	d := s.cfg.Tick(snap)
	if len(d.Targets) != len(l.pools) {
		return fmt.Errorf("replay: the planner returned %d targets for %d pools", len(d.Targets), len(l.pools))
	}
	changed := false
	for k, t := range d.Targets {
		c := s.counts(k)
		changed = changed || t != c.Active+c.Starting
		if err := s.scaleTo(k, t); err != nil {
			return err
		}
	}
	if changed || s.activity != s.lastActivity {
		s.quiet = 0
	} else {
		s.quiet++
	}
	s.lastActivity = s.activity
	s.report.Tick(snap.Tick, func() report.PlannerTick { return s.tickRecord(snap, d) }) // bounded: report.MaxPlannerTicks
	s.ticks++
	next := timing.FromMs(d.NextMs)
	if !snap.Work || math.IsNaN(d.NextMs) || next <= l.now {
		return nil
	}
	if s.quiet >= quietTicks {
		// Nothing will change before the next event: tick with it.
		ev, ok := l.next()
		if !ok {
			return nil
		}
		next = max(next, ev)
	}
	l.q.push(event{at: next, kind: PlannerTick})
	return nil
}

// poolSnapshot is pool k's part of the snapshot.
func (s *scaleState) poolSnapshot(k int) planner.PoolState {
	l := s.l
	p := &l.pools[k]
	ps := planner.PoolState{Passes: s.passes[k]}
	for _, g := range p.members {
		st := &l.ws[g]
		switch st.state {
		case starting:
			ps.Starting++
			continue
		case removed:
			continue
		case draining:
			ps.Draining++
		default:
			ps.Active++
		}
		m := l.workers[g].Metrics()
		f := s.lastFPM(g)
		wl := planner.WorkerLoad{ID: g, Running: m.Running, Waiting: m.Waiting, Draining: st.state == draining,
			QueuedPrefillTokens: f.QueuedPrefillTokens, ActiveKVTokens: f.DecodeKVTokens}
		if m.TotalBlocks > 0 {
			wl.KVUsage = float64(m.ActiveBlocks) / float64(m.TotalBlocks)
		}
		ps.Workers = append(ps.Workers, wl)
	}
	return ps
}

// scaleTo applies a target (active + starting) to pool k.
func (s *scaleState) scaleTo(k, target int) error {
	l := s.l
	p := &l.pools[k]
	have := 0
	for _, g := range p.members {
		if st := l.ws[g].state; st == active || st == starting {
			have++
		}
	}
	for ; have < target; have++ {
		if err := s.addWorker(k); err != nil {
			return err
		}
	}
	// Cancel pending startups first, then drain active workers, highest
	// ids first.
	for _, want := range []wstatus{starting, active} {
		for i := len(p.members) - 1; i >= 0 && have > target; i-- {
			g := p.members[i]
			if l.ws[g].state != want {
				continue
			}
			if want == starting {
				l.ws[g].state = removed
				l.ws[g].gone = l.now
				l.obs.Worker(g, k, ChangeRemoved, l.now)
			} else {
				l.ws[g].state = draining
				p.Router.Removed(l.ws[g].index)
				l.obs.Worker(g, k, ChangeDraining, l.now)
				s.retireIfDone(g)
			}
			have--
			s.report.Change(l.now, p.Name, s.counts(k))
		}
	}
	return nil
}

// addWorker adds a cold worker to pool k: routable now, or after the
// pool's startup time.
func (s *scaleState) addWorker(k int) error {
	l := s.l
	p := &l.pools[k]
	g := len(l.ws)
	w, err := s.cfg.New[k](g)
	if err != nil {
		return fmt.Errorf("replay: %s worker %d: %w", p.Name, g, err)
	}
	st := newWstate(k, len(p.Pool.Workers), w)
	st.state, st.added = starting, l.now
	l.ws = append(l.ws, st)
	l.workers = append(l.workers, w)
	p.Pool.Workers = append(p.Pool.Workers, w)
	p.members = append(p.members, g)
	l.obs.Worker(g, k, ChangeAdded, l.now)
	if d := s.cfg.Startup[k]; d > 0 {
		l.q.push(event{at: l.now + d, kind: WorkerReady, worker: int32(g)})
		s.report.Change(l.now, p.Name, s.counts(k))
		return nil
	}
	s.ready(g)
	return nil
}

// ready makes worker g routable (a WorkerReady event, or a startup of 0);
// a startup cancelled meanwhile stays removed.
func (s *scaleState) ready(g int) {
	l := s.l
	st := &l.ws[g]
	if st.state != starting {
		return
	}
	st.state = active
	p := &l.pools[st.pool]
	p.Router.Added(st.index)
	l.obs.Worker(g, st.pool, ChangeReady, l.now)
	s.report.Change(l.now, p.Name, s.counts(st.pool))
}

// retireIfDone removes draining worker g once it holds nothing.
func (s *scaleState) retireIfDone(g int) {
	l := s.l
	st := &l.ws[g]
	if st.state != draining || st.busy() || len(st.deferred) > 0 || !l.workers[g].Empty() {
		return
	}
	st.state, st.gone = removed, l.now
	l.obs.Worker(g, st.pool, ChangeRemoved, l.now)
	s.report.Change(l.now, l.pools[st.pool].Name, s.counts(st.pool))
}

// counts are pool k's active, starting and draining workers.
func (s *scaleState) counts(k int) (c report.WorkerCount) {
	l := s.l
	for _, g := range l.pools[k].members {
		switch l.ws[g].state {
		case active:
			c.Active++
		case starting:
			c.Starting++
		case draining:
			c.Draining++
		}
	}
	return c
}

// tickRecord is the report's record of one tick.
func (s *scaleState) tickRecord(snap planner.Snapshot, d planner.Decision) report.PlannerTick {
	l := s.l
	r := report.PlannerTick{Tick: snap.Tick, TMs: snap.NowMs, Reason: d.Reason, Action: d.Action,
		EstTTFTMs: nan(d.Diag.EstTTFTMs), EstITLMs: nan(d.Diag.EstITLMs),
		ObservedRequests: nan(d.Diag.ObservedRequests), ObservedISL: nan(d.Diag.ObservedISL), ObservedOSL: nan(d.Diag.ObservedOSL),
		PredRequests: nan(d.Diag.PredRequests), PredISL: nan(d.Diag.PredISL), PredOSL: nan(d.Diag.PredOSL),
		ObservedTTFTMs: nan(snap.Traffic.MeanTTFTMs), ObservedITLMs: nan(snap.Traffic.MeanITLMs)}
	for k := range l.pools {
		c := s.counts(k)
		pc := report.PlannerPool{Pool: l.pools[k].Name, Target: d.Targets[k], WorkerCount: c}
		if k < len(d.Diag.Floor) {
			pc.Floor = d.Diag.Floor[k]
		}
		r.Pools = append(r.Pools, pc)
	}
	return r
}

// nan is v, or nil for NaN (JSON has no NaN).
func nan(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// routerLoad is what a router sees of a worker that has done nothing yet.
func routerLoad(w *engine.Worker) router.Load {
	return router.Load{TotalBlocks: w.Metrics().TotalBlocks}
}

// startScaling sets up the planner, if any: its first tick and the
// workers at t = 0.
func (l *Loop) startScaling(s *Scaling) error {
	if s == nil {
		return nil
	}
	if s.Tick == nil || len(s.Startup) != len(l.pools) || len(s.New) != len(l.pools) {
		return fmt.Errorf("replay: scaling needs a planner and a startup time and worker factory per pool")
	}
	l.sc = &scaleState{l: l, cfg: s, passes: make([][]planner.PassSample, len(l.pools))}
	l.obs.attach(l.sc, hearPasses) // its window needs no tokens (window.go)
	for k := range l.pools {
		l.sc.report.Change(0, l.pools[k].Name, l.sc.counts(k))
	}
	if first := timing.FromMs(s.FirstMs); first > 0 && (l.total > 0 || l.opt.Live) {
		l.q.push(event{at: first, kind: PlannerTick})
	}
	return nil
}

// provisioned fills a planner run's per-worker lifecycle: when it was
// added and removed, and how long it was provisioned (to the clock's end
// if it stayed).
func (s *scaleState) provisioned(ws *report.WorkerStats, i int) {
	l := s.l
	st := &l.ws[i]
	end := l.now
	if st.state == removed {
		end = st.gone
		r := end.Ms()
		ws.RemovedMs = &r
	}
	if st.added > 0 {
		a := st.added.Ms()
		ws.AddedMs = &a
	}
	d := max(end-st.added, 0).Ms()
	ws.ProvisionedMs = &d
}
