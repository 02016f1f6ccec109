package replay

import (
	"fmt"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/handoff"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/core/router"
	"github.com/dynosim/dynosim-web/timing"
)

// Disaggregated serving (spec §7.6): requests enter the prefill pool
// (pools[0]) and decode on the decode pool (pools[1]). A hidden prefill
// copy limited to one output token runs the prompt; the decode copy
// receives the prompt's KV and produces every output token, so the report
// sees only the decode side and TTFT includes prefill queueing, prefill
// compute and the transfer.
//
// On the coordinated bootstrap path each request runs a handoff.Machine:
// the prefill worker holds its KV when it finishes, the decode worker
// reserves room at a pass start, the transfer is a TransferDone event,
// then the destination activates and the source releases (vLLM source
// first, SGLang destination first). On the direct path the prefill
// releases at once and decode is dispatched as an ordinary request after
// the full-prompt delay.

// Transfer configures the handoff of a disaggregated replay.
type Transfer struct {
	Direct     bool          // the direct completion path, else bootstrap
	Order      handoff.Order // bootstrap: who moves first
	FullPrompt bool          // charge the whole prompt, else what the destination lacks
	Link       engine.Handoff
}

// info describes t for the report.
func (t *Transfer) info() *report.TransferInfo {
	in := &report.TransferInfo{Handoff: "direct", TimingMode: "full_prompt", BytesPerToken: t.Link.KVBytesPerToken}
	if !t.Direct {
		in.Handoff, in.Order = "bootstrap", "source_first"
		if t.Order == handoff.DestinationFirst {
			in.Order = "destination_first"
		}
		if !t.FullPrompt {
			in.TimingMode = "destination_missing"
		}
	}
	if bw := t.Link.BandwidthGBps; bw > 0 {
		in.BandwidthGBps = &bw
	}
	return in
}

// xstate is the handoff state of one request (its request record's x).
type xstate struct {
	m        handoff.Machine
	pw, pr   int32         // prefill worker (global index) and rank
	dw, dr   int32         // decode worker and rank; -1 until placed
	missing  int32         // prompt tokens the destination lacks (its reservation)
	reason   engine.Reason // why it failed
	finished bool          // the prefill copy ended
}

const (
	prefillPool = 0
	decodePool  = 1
)

// disagg is a disaggregated replay's handoff: what moves a request from
// its prefill copy to its decode copy. The prefill role drives it; the
// loop hands it the decode side's reservations and the transfers' ends.
type disagg struct {
	l *Loop
	t *Transfer
}

// prefill runs a disaggregated request's hidden prefill copy: its router
// picks the prefill worker, and the copy's end starts the handoff.
type prefill struct{ d *disagg }

func (prefill) kind() Role { return Prefill }

// accept starts request id's handoff once the prefill router placed it on
// worker w (global), rank r.
func (p prefill) accept(l *Loop, id uint64, w, r int, prompt []uint32) error {
	x := &xstate{pw: int32(w), pr: int32(r), dw: -1, dr: -1}
	l.reqs.at(id).x = x
	if p.d.t.Direct {
		return p.d.submitPrefill(id, prompt)
	}
	m, acts := handoff.Start(p.d.t.Order)
	x.m = m
	return p.d.perform(id, acts)
}

func (r prefill) signals(_ *Loop, w int, p *engine.Pass) error {
	for _, s := range p.Signals {
		if err := r.d.prefillSignal(w, s); err != nil {
			return err
		}
	}
	return nil
}

// fact applies f to request id's machine and performs what it asks.
func (d *disagg) fact(id uint64, f handoff.Fact) error {
	acts, err := d.x(id).m.Apply(f)
	if err != nil {
		return fmt.Errorf("replay: request %d: handoff %v: %w", id, f, err)
	}
	return d.perform(id, acts)
}

// perform carries out the actions of request id's handoff machine.
func (d *disagg) perform(id uint64, acts handoff.Actions) error {
	x := d.x(id) // kept: a live request's record may be forgotten at its terminal
	for i := range acts.Len() {
		if err := d.act(id, x, acts.At(i)); err != nil {
			return err
		}
	}
	return nil
}

// act carries out one action of request id's handoff machine.
func (d *disagg) act(id uint64, x *xstate, a handoff.Action) error {
	l := d.l
	switch a {
	case handoff.SubmitPrefill:
		return d.submitPrefill(id, l.promptOf(l.reqs.at(id)))
	case handoff.ReserveDestination:
		return d.reserve(id)
	case handoff.StartTransfer:
		tokens := int(x.missing)
		if d.t.FullPrompt {
			tokens = l.reqs.at(id).turn.Input
		}
		d.startTransfer(id, tokens)
	case handoff.ActivateDestination:
		d.rank(x.dw, x.dr).Activate(id)
		l.reqs.at(id).worker = x.dw // a live abort waits for this (live.go)
		l.wake(int(x.dw), int(x.dr))
		return d.fact(id, handoff.DestinationActivated)
	case handoff.ReleaseSource:
		d.releaseSource(id)
		return d.fact(id, handoff.SourceReleased)
	case handoff.CancelSource:
		if !x.finished {
			// Offline, only a finished or failed prefill is canceled.
			return fmt.Errorf("replay: request %d: cannot cancel a running prefill", id)
		}
		d.releaseSource(id)
		return d.fact(id, handoff.SourceCleaned)
	case handoff.CancelDestination:
		if d.rank(x.dw, x.dr).Cancel(id) {
			l.ws[x.dw].held--
			l.wake(int(x.dw), int(x.dr))
		}
		l.pools[decodePool].Router.Finished(id, l.now)
		return d.fact(id, handoff.DestinationCleaned)
	case handoff.Complete:
		if x.m.Outcome() != handoff.OutcomeSuccess {
			l.terminal(id, x.reason.String())
		}
	}
	return nil
}

func (d *disagg) rank(w, r int32) engine.Rank { return d.l.workers[w].Ranks[r] }

// x is request id's handoff state.
func (d *disagg) x(id uint64) *xstate { return d.l.reqs.at(id).x }

// releaseSource ends request id's hold on its prefill worker.
func (d *disagg) releaseSource(id uint64) {
	l := d.l
	x := d.x(id)
	if d.rank(x.pw, x.pr).Release(id) {
		l.wake(int(x.pw), int(x.pr)) // the freed blocks may admit its waiting requests
	}
}

// submitPrefill submits the hidden prefill copy: the request limited to
// one output token.
func (d *disagg) submitPrefill(id uint64, prompt []uint32) error {
	l := d.l
	x := d.x(id)
	t := l.reqs.at(id).turn
	var planned []uint32
	if t.Planned != nil {
		planned = t.Planned[:min(1, len(t.Planned))]
	}
	if err := d.rank(x.pw, x.pr).Submit(engine.Request{ID: id, Prompt: prompt, MaxOutput: min(1, t.Output), Planned: planned, Priority: t.Priority}); err != nil {
		return fmt.Errorf("replay: prefill worker %d: %w", x.pw, err)
	}
	l.placed(int(x.pw), int(x.pr))
	return nil
}

// decodeWorker asks the decode router for request id's decode worker.
func (d *disagg) decodeWorker(id uint64, prompt []uint32) (int, int, error) {
	l := d.l
	r := l.reqs.at(id)
	pool := &l.pools[decodePool]
	l.rreq = router.Request{ID: id, Arrival: r.arrival, Now: l.now, Prompt: prompt, RunLen: l.wl.RunLen(r.turn), Output: r.turn.Output}
	pl, ok := pool.Router.Place(&l.rreq, pool)
	if !ok {
		return 0, 0, fmt.Errorf("replay: request %d: the decode pool's router held it (a decode router must not queue)", id)
	}
	w := pool.members[pl.Worker]
	l.obs.Routed(id, Decode, w, pl.Rank, l.now, -1)
	r.x.dw, r.x.dr = int32(w), int32(pl.Rank)
	return w, pl.Rank, nil
}

// reserve places request id's decode copy and queues its reservation.
func (d *disagg) reserve(id uint64) error {
	l := d.l
	r := l.reqs.at(id)
	prompt := l.promptOf(r)
	w, rk, err := d.decodeWorker(id, prompt)
	if err != nil {
		return err
	}
	why, err := l.workers[w].Ranks[rk].Reserve(engine.Request{ID: id, Prompt: prompt, MaxOutput: r.turn.Output, Planned: r.turn.Planned, Priority: r.turn.Priority})
	if err != nil {
		return fmt.Errorf("replay: decode worker %d: %w", w, err)
	}
	if why != engine.NotRejected {
		// It can never fit the destination: the handoff fails.
		r.x.reason = why
		return d.fact(id, handoff.Failed)
	}
	l.placed(w, rk)
	return nil
}

// reserved handles the reservations a decode worker's pass granted: a
// reservation is the decode side's admission of the prompt's KV.
func (d *disagg) reserved(rs []engine.Reservation) error {
	l := d.l
	for _, r := range rs {
		d.x(r.ID).missing = int32(r.Missing)
		l.obs.Admitted(r.ID, Decode, l.now, r.Resident, false)
		if err := d.fact(r.ID, handoff.DestinationReserved); err != nil {
			return err
		}
	}
	return nil
}

func (d *disagg) startTransfer(id uint64, tokens int) {
	l := d.l
	end := l.now + timing.FromMs(d.t.Link.DelayMs(tokens))
	l.obs.TransferStarted(id, l.now, end, tokens, float64(tokens)*d.t.Link.KVBytesPerToken)
	l.q.push(event{at: end, kind: TransferDone, req: id})
}

// transferDone ends request id's transfer: the bootstrap path activates
// the destination; the direct path dispatches decode now.
func (d *disagg) transferDone(id uint64) error {
	l := d.l
	l.obs.TransferDone(id, l.now)
	if !d.t.Direct {
		return d.fact(id, handoff.TransferCompleted)
	}
	r := l.reqs.at(id)
	prompt := l.promptOf(r)
	w, rk, err := d.decodeWorker(id, prompt)
	if err != nil {
		return err
	}
	if err := l.workers[w].Ranks[rk].Submit(engine.Request{ID: id, Prompt: prompt, MaxOutput: r.turn.Output, Planned: r.turn.Planned, Priority: r.turn.Priority}); err != nil {
		return fmt.Errorf("replay: decode worker %d: %w", w, err)
	}
	l.placed(w, rk)
	r.worker = int32(w) // decoding: a live abort waits for this (live.go)
	return nil
}

// prefillSignal handles a signal of worker w's hidden prefill copy: its
// token is not the request's (the decode copy emits every token); its end
// starts the transfer or, on failure, ends the request.
func (d *disagg) prefillSignal(w int, s engine.Signal) error {
	l := d.l
	st := &l.ws[w]
	pool := &l.pools[prefillPool]
	if s.HasToken {
		pool.Router.PrefillDone(s.ID, l.now)
		st.stats.OutputTokens++
	}
	if !s.Completed {
		return nil
	}
	st.held--
	pool.Router.Finished(s.ID, l.now)
	r := l.reqs.at(s.ID)
	x := r.x
	x.finished = true
	if !s.Rejected {
		l.obs.Prefilled(s.ID, l.now)
	}
	switch {
	case s.Rejected && d.t.Direct:
		l.terminal(s.ID, s.Reason.String())
	case s.Rejected:
		x.reason = s.Reason
		return d.fact(s.ID, handoff.Failed)
	case r.turn.Output == 0:
		// Nothing to decode: the request ends with its prompt.
		d.rank(x.pw, x.pr).Release(s.ID)
		l.terminal(s.ID, "")
	case d.t.Direct:
		d.startTransfer(s.ID, r.turn.Input)
	default:
		return d.fact(s.ID, handoff.SourceHeld)
	}
	return nil
}
