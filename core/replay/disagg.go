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

// xstate is the handoff state of one request.
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

// placeDisagg starts request id's handoff once the prefill router placed
// it on worker w (global), rank r.
func (l *Loop) placeDisagg(id uint64, w, r int) error {
	x := l.x(id)
	x.pw, x.pr, x.dw, x.dr = int32(w), int32(r), -1, -1
	if l.xfer.Direct {
		return l.submitPrefill(id)
	}
	m, acts := handoff.Start(l.xfer.Order)
	x.m = m
	return l.perform(id, acts)
}

// fact applies f to request id's machine and performs what it asks.
func (l *Loop) fact(id uint64, f handoff.Fact) error {
	acts, err := l.x(id).m.Apply(f)
	if err != nil {
		return fmt.Errorf("replay: request %d: handoff %v: %w", id, f, err)
	}
	return l.perform(id, acts)
}

func (l *Loop) perform(id uint64, acts handoff.Actions) error {
	x := l.x(id)
	for i := range acts.Len() {
		var err error
		switch acts.At(i) {
		case handoff.SubmitPrefill:
			err = l.submitPrefill(id)
		case handoff.ReserveDestination:
			err = l.reserve(id)
		case handoff.StartTransfer:
			tokens := int(x.missing)
			if l.xfer.FullPrompt {
				tokens = l.turn(id).Input
			}
			l.startTransfer(id, tokens)
		case handoff.ActivateDestination:
			l.rank(x.dw, x.dr).Activate(id)
			l.decoding(id, int(x.dw))
			l.ws[x.dw].stalled = false
			err = l.fact(id, handoff.DestinationActivated)
		case handoff.ReleaseSource:
			l.releaseSource(id)
			err = l.fact(id, handoff.SourceReleased)
		case handoff.CancelSource:
			if !x.finished {
				// Offline, only a finished or failed prefill is canceled.
				return fmt.Errorf("replay: request %d: cannot cancel a running prefill", id)
			}
			l.releaseSource(id)
			err = l.fact(id, handoff.SourceCleaned)
		case handoff.CancelDestination:
			if l.rank(x.dw, x.dr).Cancel(id) {
				l.ws[x.dw].held--
				l.ws[x.dw].stalled = false
			}
			l.pools[decodePool].Router.Finished(id, l.now)
			err = l.fact(id, handoff.DestinationCleaned)
		case handoff.Complete:
			if x.m.Outcome() != handoff.OutcomeSuccess {
				l.terminal(id, x.reason.String())
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (l *Loop) rank(w, r int32) engine.Rank { return l.workers[w].Ranks[r] }

// x is request id's handoff state.
func (l *Loop) x(id uint64) *xstate { return &l.xs[id-1-l.base] }

// decoding notes that request id's decode copy runs on worker w now: a
// live abort waits for that (live.go), so the handoff is never cut short.
func (l *Loop) decoding(id uint64, w int) { l.req(id).worker = int32(w) }

// releaseSource ends request id's hold on its prefill worker.
func (l *Loop) releaseSource(id uint64) {
	x := l.x(id)
	if l.rank(x.pw, x.pr).Release(id) {
		l.ws[x.pw].stalled = false // the freed blocks may admit its waiting requests
	}
}

// submitPrefill submits the hidden prefill copy: the request limited to
// one output token.
func (l *Loop) submitPrefill(id uint64) error {
	x := l.x(id)
	t := l.turn(id)
	var planned []uint32
	if t.Planned != nil {
		planned = t.Planned[:min(1, len(t.Planned))]
	}
	l.prompt = l.wl.Prompt(l.prompt[:0], t)
	if err := l.rank(x.pw, x.pr).Submit(engine.Request{ID: id, Prompt: l.prompt, MaxOutput: min(1, t.Output), Planned: planned}); err != nil {
		return fmt.Errorf("replay: prefill worker %d: %w", x.pw, err)
	}
	l.placed(int(x.pw))
	return nil
}

// placed updates worker w's bookkeeping for a request placed on it.
func (l *Loop) placed(w int) {
	st := &l.ws[w]
	st.seen.Waiting++
	st.since++
	st.stalled = false
	st.held++
	st.stats.Requests++
}

// decodeWorker asks the decode router for request id's decode worker.
func (l *Loop) decodeWorker(id uint64) (int, int, error) {
	ri := l.req(id)
	t := l.turn(id)
	l.prompt = l.wl.Prompt(l.prompt[:0], t)
	pool := &l.pools[decodePool]
	l.rreq = router.Request{ID: id, Arrival: ri.arrival, Now: l.now, Prompt: l.prompt, Output: t.Output}
	pl, ok := pool.Router.Place(&l.rreq, pool)
	if !ok {
		return 0, 0, fmt.Errorf("replay: request %d: the decode pool's router held it (a decode router must not queue)", id)
	}
	w := pool.members[pl.Worker]
	l.col.Decode(id, w, pl.Rank, l.now)
	if l.obs != nil {
		l.obs.Routed(id, w, pl.Rank)
	}
	x := l.x(id)
	x.dw, x.dr = int32(w), int32(pl.Rank)
	return w, pl.Rank, nil
}

// reserve places request id's decode copy and queues its reservation.
func (l *Loop) reserve(id uint64) error {
	w, r, err := l.decodeWorker(id)
	if err != nil {
		return err
	}
	t := l.turn(id)
	why, err := l.workers[w].Ranks[r].Reserve(engine.Request{ID: id, Prompt: l.prompt, MaxOutput: t.Output, Planned: t.Planned})
	if err != nil {
		return fmt.Errorf("replay: decode worker %d: %w", w, err)
	}
	if why != engine.NotRejected {
		// It can never fit the destination: the handoff fails.
		l.x(id).reason = why
		return l.fact(id, handoff.Failed)
	}
	l.placed(w)
	return nil
}

// reserved handles the reservations a decode worker's pass granted.
func (l *Loop) reserved(rs []engine.Reservation) error {
	for _, r := range rs {
		x := l.x(r.ID)
		x.missing = int32(r.Missing)
		l.col.DecodeReuse(r.ID, r.Resident)
		if err := l.fact(r.ID, handoff.DestinationReserved); err != nil {
			return err
		}
	}
	return nil
}

func (l *Loop) startTransfer(id uint64, tokens int) {
	end := l.now + timing.FromMs(l.xfer.Link.DelayMs(tokens))
	l.col.Transfer(id, l.now, end, tokens, float64(tokens)*l.xfer.Link.KVBytesPerToken)
	l.q.push(event{at: end, kind: TransferDone, req: id})
}

// transferDone ends request id's transfer: the bootstrap path activates
// the destination; the direct path dispatches decode now.
func (l *Loop) transferDone(id uint64) error {
	if !l.xfer.Direct {
		return l.fact(id, handoff.TransferCompleted)
	}
	w, r, err := l.decodeWorker(id)
	if err != nil {
		return err
	}
	t := l.turn(id)
	if err := l.workers[w].Ranks[r].Submit(engine.Request{ID: id, Prompt: l.prompt, MaxOutput: t.Output, Planned: t.Planned}); err != nil {
		return fmt.Errorf("replay: decode worker %d: %w", w, err)
	}
	l.placed(w)
	l.decoding(id, w)
	return nil
}

// prefillSignal handles a signal of the hidden prefill copy: its token is
// not the request's (the decode copy emits every token); its end starts
// the transfer or, on failure, ends the request.
func (l *Loop) prefillSignal(st *wstate, s engine.Signal) error {
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
	x := l.x(s.ID)
	x.finished = true
	if !s.Rejected {
		l.col.PrefillDone(s.ID, l.now)
	}
	switch {
	case s.Rejected && l.xfer.Direct:
		l.terminal(s.ID, s.Reason.String())
	case s.Rejected:
		x.reason = s.Reason
		return l.fact(s.ID, handoff.Failed)
	case l.turn(s.ID).Output == 0:
		// Nothing to decode: the request ends with its prompt.
		l.rank(x.pw, x.pr).Release(s.ID)
		l.terminal(s.ID, "")
	case l.xfer.Direct:
		l.startTransfer(s.ID, l.turn(s.ID).Input)
	default:
		return l.fact(s.ID, handoff.SourceHeld)
	}
	return nil
}
