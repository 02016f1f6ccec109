package replay

import (
	"fmt"
	"slices"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/router"
)

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

// place asks the first pool's router where request id runs and submits it
// there; false means the router holds it.
func (l *Loop) place(id uint64) (bool, error) {
	ri := l.req(id)
	t := l.turn(id)
	l.prompt = l.wl.Prompt(l.prompt[:0], t)
	pool := &l.pools[0]
	l.rreq = router.Request{ID: id, Arrival: ri.arrival, Now: l.now, Prompt: l.prompt, Output: t.Output}
	pl, ok := pool.Router.Place(&l.rreq, pool)
	if !ok {
		return false, nil
	}
	w := pool.members[pl.Worker]
	l.col.Route(id, w, pl.Rank, l.now, pl.Overlap)
	if l.obs != nil {
		l.obs.Routed(id, w, pl.Rank)
	}
	if l.xfer != nil {
		return true, l.placeDisagg(id, w, pl.Rank) // its worker is its decode worker (decoding)
	}
	ri.worker = int32(w)
	if st := &l.ws[w]; l.opt.AsyncScheduling && st.busy {
		st.deferred = append(st.deferred, deferred{id, pl.Rank})
		l.placed(w)
		return true, nil
	}
	if err := l.submit(w, pl.Rank, id); err != nil {
		return false, err
	}
	l.placed(w)
	return true, nil
}

// submit hands request id, whose prompt is in l.prompt, to rank of worker w.
func (l *Loop) submit(w, rank int, id uint64) error {
	t := l.turn(id)
	st := &l.ws[w]
	pool := &l.pools[st.pool]
	if err := pool.Pool.Workers[st.index].Ranks[rank].Submit(engine.Request{ID: id, Prompt: l.prompt, MaxOutput: t.Output, Planned: t.Planned}); err != nil {
		return fmt.Errorf("replay: %s worker %d: %w", pool.Name, st.index, err)
	}
	return nil
}

// dispatch offers request id to the router; one it holds waits.
func (l *Loop) dispatch(id uint64) error {
	if l.req(id).abort {
		l.terminal(id, Aborted) // its client left while it was in the frontend
		return nil
	}
	placed, err := l.place(id)
	if !placed && err == nil {
		l.waiting = append(l.waiting, id)
	}
	return err
}
