package replay

import (
	"fmt"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/router"
	"github.com/dynosim/dynosim-web/timing"
)

// Stepping ahead of the clock (issue 34 item 1). Most passes of a replay
// are quiet: every request in the batch gets one more token and nothing
// else happens (no admission, completion, first token, watched request)
// but KV events. Pushing each such pass end through the event queue and
// settling the whole cluster at its time cost more than the pass itself.
//
// Before a bound E nothing can reach a worker from outside: no arrival
// (the arrival source's next start, the queued follow-ups and dispatches),
// no follow-up turn of a request that ends elsewhere (it comes at least the
// shortest turn delay after now), no held request placed. So a worker's
// passes ending before E depend on its own state only, and the loop steps
// them back to back, applying each at once. What it tells the collector
// commutes with the other workers' facts of the same span: per-request
// records, per-worker series samples in the worker's own order and
// integer token counts per bucket (E also stays below the series'
// coarsening, where its float sums would regroup). Terminal facts, whose
// order feeds the ITL moments, never come from a quiet pass, so the report
// is byte for byte the one of stepping pass by pass. A quiet pass's KV
// events go to its router at once: the router's index of a worker changes
// only through that worker's events and is read only by placements, which
// come at or after E, so it reads the same index (half of the KV router
// replay's passes store a decoded block and were not stepped ahead; issue
// 34 item 2). The first pass that is not quiet, or ends at or after E, is
// pushed as usual; its place among pass ends of the same time is that of
// the pass-by-pass order (queue.go: started, settle iteration, worker,
// lane).
//
// Off where other parts read a worker between its pass ends: a planner,
// disaggregation's handoff, KVBM tiers (a shared G3), observers of passes
// or tokens (live mode, tests), a closed loop (a session starts when one
// ends), a virtual-time cap, and workers of several lanes.

// PassByPass turns stepping ahead off (tests compare both ways).
var PassByPass bool

// initAhead decides once whether the run may step ahead.
func (l *Loop) initAhead() {
	o := &l.opt
	l.aheadOK = !PassByPass && !o.Live && l.dis == nil && l.sc == nil && !o.Tiers && o.MaxTime == 0 &&
		o.Load.Kind != Concurrency && o.Watch == 0 && len(l.obs.passes) == 0 && len(l.obs.tokens) == 0
	if !l.aheadOK {
		return
	}
	l.minDelay = timing.Horizon
	for i := range l.wl.Sessions {
		ts := l.wl.Sessions[i].Turns
		for j := 1; j < len(ts); j++ {
			l.minDelay = min(l.minDelay, o.Load.scale(ts[j].Delay))
		}
	}
	l.aheadOK = l.minDelay > 0
}

// aheadLimit is the bound E for worker i at l.now: its passes that end
// before it may be stepped ahead (0: none may).
func (l *Loop) aheadLimit(i int) timing.Time {
	st := &l.ws[i]
	if !l.aheadOK || len(l.waiting) > 0 || len(st.lanes) > 1 || len(st.deferred) > 0 {
		return 0
	}
	e := timing.Horizon
	if l.limit < timing.Horizon {
		e = l.limit + 1 // RunUntil applies nothing past its limit
	}
	if l.minDelay < timing.Horizon-l.now {
		e = min(e, l.now+l.minDelay)
	}
	if l.releasable() {
		if s, ok := l.arr.peek(l.now); ok {
			e = min(e, s)
		}
	}
	if l.q.len() > 32 {
		// A long queue (follow-up turns): its earliest event of any kind
		// bounds E, rather than a scan per pass.
		e = min(e, l.q.top().at)
	} else {
		for k := range l.q.h {
			if l.q.h[k].kind != PassEnd {
				e = min(e, l.q.h[k].at)
			}
		}
	}
	return min(e, l.col.Series.Horizon())
}

// quiet reports whether pass p only emitted tokens after the first (or
// computed without emitting) and took time.
func quiet(p *engine.Pass) bool {
	if !p.Busy || p.End <= p.Start || len(p.Admissions) > 0 || len(p.Reserved) > 0 || p.Watched != nil {
		return false
	}
	for k := range p.Signals {
		if s := &p.Signals[k]; !s.HasToken || s.Completed || s.Cached >= 0 {
			return false
		}
	}
	return true
}

// runAhead steps lane k of worker i, whose in-flight pass started at
// l.now, ahead of the clock while its passes are quiet and end before e;
// the first other pass is pushed as the lane's pass end.
func (l *Loop) runAhead(i, k int, e timing.Time) error {
	ln := &l.ws[i].lanes[k]
	for {
		p := ln.inflight
		if !quiet(p) || p.End >= e {
			it := uint32(1) // a pass started ahead: the first iteration at its start
			if p.Start == l.now {
				it = l.iter
			}
			l.q.push(event{at: p.End, kind: PassEnd, worker: int32(i), lane: int32(k), started: p.Start, iter: it})
			return nil
		}
		l.applyQuiet(i, k)
		if err := l.passBudget(); err != nil {
			return err
		}
		at := p.End
		if p = l.step(i, k, at); p.End <= at {
			// A pass that ends where it starts is applied at once, in
			// the start phase of its time (applyEarly).
			ln.early = true
			l.q.push(event{at: at, kind: PassEnd, worker: int32(i), lane: int32(k), started: at, iter: 1})
			return nil
		}
	}
}

// applyEarly applies lane k of worker i's pass stepped ahead that ended
// at its start, as startPass does one that ends at once.
func (l *Loop) applyEarly(i, k int) error {
	ln := &l.ws[i].lanes[k]
	ln.early = false
	if !ln.inflight.Busy {
		ln.stalled = true // nothing can change until new work arrives
	}
	return l.apply(i, k)
}

// passBudget counts a pass against Options.MaxPasses.
func (l *Loop) passBudget() error {
	if l.opt.MaxPasses > 0 && l.passes >= l.opt.MaxPasses {
		return fmt.Errorf("%w: more than %d engine passes (use the CLI or the page for large runs)", ErrTooLarge, l.opt.MaxPasses)
	}
	l.passes++
	return nil
}

// step runs lane k of worker i's pass starting at at and records it.
func (l *Loop) step(i, k int, at timing.Time) *engine.Pass {
	st := &l.ws[i]
	p := l.workers[i].StepLane(at, k)
	l.obs.col.PassStarted(i, p)
	if len(l.obs.passes) > 0 {
		l.obs.passStarted(i, p)
	}
	st.stats.Passes++
	if n := len(st.lanes); n == 1 {
		st.stats.BusyMs += (p.End - p.Start).Ms()
		st.stats.PeakActiveBlock = max(st.stats.PeakActiveBlock, p.Metrics.ActiveBlocks)
	} else {
		// Busy time is the lanes' mean; the peak is the worker's, as the
		// lanes' pass ends show it (apply).
		st.stats.BusyMs += (p.End - p.Start).Ms() / float64(n)
	}
	ln := &st.lanes[k]
	ln.inflight, ln.busy = p, true
	return p
}

// applyQuiet is apply for a quiet pass of a one-lane worker, without what
// such a pass never has (admissions, a watched request, first tokens,
// terminals) nor what a run that steps ahead never has (pass or token
// observers, a planner, live aborts).
func (l *Loop) applyQuiet(i, k int) {
	st := &l.ws[i]
	ln := &st.lanes[k]
	p := ln.inflight
	ln.busy, ln.inflight = false, nil
	m := &p.Metrics
	// Built once in registers: copying ln.load back out right after its
	// field stores stalled on store forwarding (issue 34 item 1).
	ld := router.Load{Running: m.Running, Waiting: m.Waiting, ActiveBlocks: m.ActiveBlocks, TotalBlocks: m.TotalBlocks}
	ln.load = ld
	ld.Waiting += st.since
	st.seen = ld
	if len(p.Events) > 0 {
		l.pools[st.pool].Router.Observe(st.index, p.Events)
	}
	for j := range p.Signals {
		l.col.TokenUncounted(p.Signals[j].ID, p.Start, p.End)
	}
	l.col.CountTokens(p.End, len(p.Signals))
	st.stats.OutputTokens += len(p.Signals)
}
