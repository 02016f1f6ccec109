package replay

import (
	"fmt"
	"slices"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/router"
)

// role is what a pool does with the requests its router places and with
// its workers' pass results, as raft has one step function per state: the
// loop hands a pool's events to its role and never asks which role it is.
// aggregated serves a request whole; prefill (disagg.go) runs the hidden
// prefill copy and starts the handoff; decode emits every token of a
// disaggregated request.
type role interface {
	// kind is the role's name in the loop's facts.
	kind() Role
	// accept takes request id, which the pool's router placed on worker
	// w (global index), rank r; prompt is its prompt, valid during the
	// call.
	accept(l *Loop, id uint64, w, r int, prompt []uint32) error
	// signals handles the signals of worker w's pass p at its end.
	signals(l *Loop, w int, p *engine.Pass) error
}

// roleOf is the role of pool i: prefill then decode in a disaggregated
// replay (d), else aggregated.
func roleOf(i int, d *disagg) role {
	switch {
	case d == nil:
		return &aggregated{}
	case i == prefillPool:
		return prefill{d}
	default:
		return &decode{}
	}
}

// aggregated serves a request on one worker, prefill and decode. Its
// methods take a pointer: a value method called through the role
// interface goes through a generated wrapper, once per pass.
type aggregated struct{}

func (*aggregated) kind() Role { return Aggregated }

// accept submits the request to its rank now, or, under
// Options.AsyncScheduling, after the busy worker's next pass starts.
func (*aggregated) accept(l *Loop, id uint64, w, r int, prompt []uint32) error {
	l.reqs.at(id).worker = int32(w)
	if st := &l.ws[w]; l.opt.AsyncScheduling && st.lanes[l.workers[w].LaneOf(r)].busy {
		st.deferred = append(st.deferred, deferred{id, r})
		l.placed(w, r)
		return nil
	}
	if err := l.submit(w, r, id, prompt); err != nil {
		return err
	}
	l.placed(w, r)
	return nil
}

// decode emits a disaggregated request's tokens as aggregated does; its
// requests come from the handoff (disagg.go), not from its router.
type decode struct{ aggregated }

func (*decode) kind() Role { return Decode }

func (*decode) accept(_ *Loop, id uint64, _, _ int, _ []uint32) error {
	return fmt.Errorf("replay: request %d: a decode pool takes no arrivals", id)
}

// signals handles the signals of a pass whose tokens are the requests'
// own: tokens stream, and a completed request ends.
func (*aggregated) signals(l *Loop, w int, p *engine.Pass) error {
	st := &l.ws[w]
	pool := &l.pools[st.pool]
	for _, s := range p.Signals {
		if s.HasToken {
			// The hottest fact (observe.go): the collector's count is the
			// first-token test.
			if l.col.Token(s.ID, p.Start, p.End) == 1 {
				pool.Router.PrefillDone(s.ID, l.now)
				l.reqs.at(s.ID).first = p.End
			}
			if len(l.obs.tokens) > 0 {
				l.obs.tokenRest(s.ID, p.Start, p.End, s.Token)
			}
			st.stats.OutputTokens++
		}
		if s.Completed {
			st.held--
			why := ""
			if s.Rejected {
				why = s.Reason.String()
			}
			pool.Router.Finished(s.ID, l.now)
			l.terminal(s.ID, why)
		}
	}
	return nil
}

// placeHeld offers held requests to the router again, in the order its
// Next picks, and stops at the first it still holds.
func (l *Loop) placeHeld() (n int, err error) {
	pool := &l.pools[0]
	for len(l.waiting) > 0 {
		i := 0
		if len(l.waiting) > 1 {
			i = pool.Router.Next(l.waiting)
		}
		ok, err := l.place(l.waiting[i])
		if err != nil || !ok {
			return n, err
		}
		l.waiting = slices.Delete(l.waiting, i, i+1)
		n++
	}
	return n, nil
}

// place asks the first pool's router where request id runs and hands it
// to the pool's role; false means the router holds it.
func (l *Loop) place(id uint64) (bool, error) {
	r := l.reqs.at(id)
	prompt := l.promptOf(r)
	pool := &l.pools[0]
	if w, ok := l.pins[id]; ok {
		delete(l.pins, id)
		return true, l.placePinned(id, w, prompt)
	}
	l.rreq = router.Request{ID: id, Arrival: r.arrival, Now: l.now, Prompt: prompt, RunLen: l.wl.RunLen(r.turn), Output: r.turn.Output, Priority: r.turn.Priority, StrictPriority: r.turn.StrictPriority}
	pl, ok := pool.Router.Place(&l.rreq, pool)
	if !ok {
		return false, nil
	}
	w := pool.members[pl.Worker]
	l.obs.Routed(id, pool.kind, w, pl.Rank, l.now, pl.Overlap)
	if h, ok := pool.Router.(promptHasher); ok {
		// The engine takes the router's hashes of this prompt instead of
		// hashing it again (submit; issue 34 item 2).
		l.hashed.id, l.hashed.set = id, true
		l.hashed.bs, l.hashed.hashes, l.hashed.locals = h.PromptHashes()
		defer func() { l.hashed = promptHashes{} }()
	}
	return true, pool.role.accept(l, id, w, pl.Rank, prompt)
}

// promptHasher is a router that hashed the prompt it placed last
// (router.KV.PromptHashes).
type promptHasher interface {
	PromptHashes() (blockSize int, hashes, locals []uint64)
}

// promptHashes are the block hashes of request id's prompt from the router
// that placed it, for submit while place hands it to its worker.
type promptHashes struct {
	id             uint64
	set            bool
	bs             int
	hashes, locals []uint64
}

// promptOf is request r's prompt tokens, in a buffer the loop reuses: the
// value is valid until the next call.
func (l *Loop) promptOf(r *request) []uint32 {
	l.scratch = l.wl.Prompt(l.scratch[:0], r.turn)
	return l.scratch
}

// submit hands request id with its prompt to rank of worker w.
func (l *Loop) submit(w, rank int, id uint64, prompt []uint32) error {
	t := l.reqs.at(id).turn
	st := &l.ws[w]
	pool := &l.pools[st.pool]
	req := engine.Request{ID: id, Prompt: prompt, MaxOutput: t.Output, Planned: t.Planned, Priority: t.Priority}
	if h := &l.hashed; h.set && h.id == id {
		req.HashBlock, req.Hashes, req.Locals = h.bs, h.hashes, h.locals
	}
	if err := pool.Pool.Workers[st.index].Ranks[rank].Submit(req); err != nil {
		return fmt.Errorf("replay: %s worker %d: %w", pool.Name, st.index, err)
	}
	return nil
}

// placed updates worker w's bookkeeping for a request placed on its rank r.
func (l *Loop) placed(w, r int) {
	st := &l.ws[w]
	st.seen.Waiting++
	st.since++
	st.held++
	st.stats.Requests++
	l.wake(w, r)
}

// wake clears the stall of the lane of worker w's rank r: new work or
// freed blocks may let its next pass do something.
func (l *Loop) wake(w, r int) {
	l.ws[w].lanes[l.workers[w].LaneOf(r)].stalled = false
}

// dispatch offers request id to the router; one it holds waits.
func (l *Loop) dispatch(id uint64) error {
	if l.reqs.at(id).abort {
		delete(l.pins, id)
		l.terminal(id, Aborted) // its client left while it was in the frontend
		return nil
	}
	placed, err := l.place(id)
	if !placed && err == nil {
		l.waiting = append(l.waiting, id)
	}
	return err
}
