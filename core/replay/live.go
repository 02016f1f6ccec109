package replay

import (
	"errors"
	"fmt"
	"slices"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/workload"
	"github.com/dynosim/dynosim-web/timing"
)

// Live mode (Options.Live) steps the same loop on a wall clock: a driver
// submits requests as clients send them (Submit), aborts those whose
// clients go away (Abort), calls RunUntil with the virtual time its clock
// has reached, and hears what becomes visible through Options.Observer.
// The loop never ends on its own; the workload is empty, and what the loop
// keeps per request is dropped once it and every older request ended, so
// memory follows the requests in flight. Disaggregated pools and the
// planner work as offline; a live planner ticks for as long as the server
// runs.

// Aborted is the terminal reason of an aborted request.
const Aborted = "aborted"

// ErrNotLive is returned by Submit on a loop not in live mode.
var ErrNotLive = errors.New("replay: not a live loop")

// Submit releases a request now: its prompt tokens (copied) and requested
// output. It returns the request's id; the next RunUntil routes it.
func (l *Loop) Submit(prompt []uint32, maxOutput int, priority int32) (uint64, error) {
	return l.submitLive(prompt, maxOutput, priority, -1)
}

// SubmitTo is Submit for a request its client sent to worker w itself (a
// gateway's choice, on live's per-worker port): the first pool's router
// does not place it; it runs on w, on the rank with the fewest requests
// running and waiting. In a disaggregated deployment w is a prefill
// worker and the decode pool's router still picks the decode side.
func (l *Loop) SubmitTo(w int, prompt []uint32, maxOutput int, priority int32) (uint64, error) {
	if w < 0 || w >= len(l.ws) || l.ws[w].pool != 0 {
		return 0, fmt.Errorf("replay: worker %d is not a worker of the first pool", w)
	}
	return l.submitLive(prompt, maxOutput, priority, w)
}

// submitLive releases a live request, pinned to worker pin if pin ≥ 0.
func (l *Loop) submitLive(prompt []uint32, maxOutput int, priority int32, pin int) (uint64, error) {
	if !l.opt.Live {
		return 0, ErrNotLive
	}
	l.released++
	t := &workload.Turn{Input: len(prompt), Output: maxOutput, Blocks: slices.Clone(prompt), Priority: priority}
	id := l.reqs.add(request{turn: t, session: -1, index: -1, arrival: l.now, worker: -1})
	if pin >= 0 {
		if l.pins == nil {
			l.pins = map[uint64]int{}
		}
		l.pins[id] = pin // place takes it from here
	}
	l.obs.Arrived(id, l.now, len(prompt), maxOutput)
	if l.opt.Frontend > 0 {
		l.q.push(event{at: l.now + l.opt.Frontend, kind: Dispatch, req: id})
		return id, nil
	}
	return id, l.dispatch(id)
}

// placePinned hands request id to worker w of the first pool directly.
func (l *Loop) placePinned(id uint64, w int, prompt []uint32) error {
	pool := &l.pools[0]
	rank, best := 0, -1
	for r, rk := range l.workers[w].Ranks {
		m := rk.Metrics()
		if n := m.Running + m.Waiting; best < 0 || n < best {
			rank, best = r, n
		}
	}
	l.obs.Routed(id, pool.kind, w, rank, l.now, 0)
	return pool.role.accept(l, id, w, rank, prompt)
}

// PoolRole is the role of worker w's pool.
func (l *Loop) PoolRole(w int) Role { return l.pools[l.ws[w].pool].kind }

// Abort ends request id, whose client went away, and frees its KV. A
// request still with the router, or on an idle worker, ends now; one in
// a pass in flight ends after it (if that pass did not end it). It
// reports whether the request was live.
func (l *Loop) Abort(id uint64) bool {
	ri := l.reqs.lookup(id)
	if ri == nil || ri.over || ri.abort {
		return false
	}
	ri.abort = true
	if i := slices.Index(l.waiting, id); i >= 0 {
		l.waiting = slices.Delete(l.waiting, i, i+1)
		l.terminal(id, Aborted)
		return true
	}
	if ri.worker < 0 {
		if l.dis != nil {
			// Disaggregated: the prefill and the handoff run their
			// course; the decode copy ends after its decode worker's
			// next pass (or at dispatch, if it is still in the frontend).
			l.aborts = append(l.aborts, id)
		}
		return true // still in the frontend: it ends at dispatch
	}
	st := &l.ws[ri.worker]
	if i := slices.IndexFunc(st.deferred, func(d deferred) bool { return d.id == id }); i >= 0 {
		st.deferred = slices.Delete(st.deferred, i, i+1)
		l.aborted(int(ri.worker), id)
		return true
	}
	if l.workers[ri.worker].Abort(id, l.laneBusy(int(ri.worker))) {
		l.aborted(int(ri.worker), id)
		return true
	}
	l.aborts = append(l.aborts, id) // after the pass in flight, or once unparked
	return true
}

// laneBusy reports whether a lane of worker w has a pass in flight: its
// ranks' requests cannot be aborted before it ends.
func (l *Loop) laneBusy(w int) func(int) bool {
	return func(k int) bool { return l.ws[w].lanes[k].busy }
}

// aborted ends request id, which worker w no longer holds.
func (l *Loop) aborted(w int, id uint64) {
	st := &l.ws[w]
	st.held--
	l.pools[st.pool].Router.Finished(id, l.now)
	l.terminal(id, Aborted)
}

// retryAborts ends the pending aborts worker w can carry out now that its
// pass ended (a request that pass completed has ended already).
func (l *Loop) retryAborts(w int) {
	keep := l.aborts[:0]
	for _, id := range l.aborts {
		ri := l.reqs.lookup(id)
		switch {
		case ri == nil || ri.over:
		case int(ri.worker) != w:
			keep = append(keep, id)
		case l.workers[w].Abort(id, l.laneBusy(w)):
			l.aborted(w, id)
		default:
			keep = append(keep, id) // parked for an onboarding: after its next pass
		}
	}
	l.aborts = keep
}

// forget drops what the loop and its collector keep of the oldest
// requests once they and every older one ended: one table, one trim.
func (l *Loop) forget() {
	if k := l.reqs.forget(); k > 0 {
		l.col.Forget(k)
	}
}

// Workers is the number of workers, all pools.
func (l *Loop) Workers() int { return len(l.workers) }

// Worker is worker i (read-only use: its ranks' metrics).
func (l *Loop) Worker(i int) *engine.Worker { return l.workers[i] }

// Held is the number of requests the router holds.
func (l *Loop) Held() int { return len(l.waiting) }

// Next is the time of the next event, if any (a live driver's timer).
func (l *Loop) Next() (timing.Time, bool) { return l.next() }
