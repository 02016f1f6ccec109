package replay

import (
	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/timing"
)

// Observer hears the loop's facts in the loop's order, offline or live.
// Observers never change the loop's state: the report collector, the
// planner's traffic window, progress and a live driver all hear the same
// stream, so a fact is emitted once and every consumer agrees on it.
// Calls come from the goroutine that steps the loop; an observer must not
// call back into it. Embed NopObserver to hear only some facts.
//
// Within one pass end the order is: its admissions and parks (Admitted,
// Parked), then PassEnded, then its tokens and terminals in signal order.
type Observer interface {
	// Arrived: request id was released at at with its prompt and
	// requested output lengths.
	Arrived(id uint64, at timing.Time, input, output int)
	// Routed: a pool of the given role placed it on worker's DP rank at
	// at; overlap is the router's estimate of its cached prompt tokens
	// (-1: none). Disaggregated: its prefill worker, then its decode one.
	Routed(id uint64, role Role, worker, rank int, at timing.Time, overlap int)
	// Admitted: an engine admitted it at the start of a pass, reusing
	// reused prompt tokens from its prefix cache; again marks a
	// re-admission after a preemption. A decode pool's admission (its
	// reservation, on the bootstrap path) has role Decode.
	Admitted(id uint64, role Role, at timing.Time, reused int, again bool)
	// Parked: it was set aside at at to onboard lower-tier KV.
	Parked(id uint64, at timing.Time)
	// PassStarted: worker started pass p (its scheduling decisions are
	// made); PassEnded: p's results become visible. p is reused by the
	// worker's next pass, and so are its Events' buffers except in a live
	// deployment (engine.Config.TransientEvents): copy what you keep.
	PassStarted(worker int, p *engine.Pass)
	PassEnded(worker int, p *engine.Pass)
	// Token: it emitted token in the pass from start to end.
	Token(id uint64, start, end timing.Time, token uint32)
	// Prefilled: disaggregated, its prefill ended at at.
	Prefilled(id uint64, at timing.Time)
	// TransferStarted and TransferDone: its KV moves from its prefill to
	// its decode worker, tokens prompt tokens of bytes bytes.
	TransferStarted(id uint64, start, end timing.Time, tokens int, bytes float64)
	TransferDone(id uint64, at timing.Time)
	// Terminal: it ended at at: completed (""), rejected (the reason) or
	// aborted (Aborted).
	Terminal(id uint64, at timing.Time, reason string)
	// Worker: worker (global index) of pool changed at at.
	Worker(worker, pool int, change WorkerChange, at timing.Time)
}

// Role is a pool's part in serving a request.
type Role uint8

const (
	Aggregated Role = iota // prefill and decode on one worker
	Prefill                // disaggregated: the hidden prefill copy
	Decode                 // disaggregated: every output token
)

// WorkerChange is a worker's step in the planner's lifecycle.
type WorkerChange uint8

const (
	ChangeAdded    WorkerChange = iota // provisioned; routable once ready
	ChangeReady                        // routable
	ChangeDraining                     // taking no new requests
	ChangeRemoved                      // gone
)

// NopObserver hears nothing: embed it to implement only some facts.
type NopObserver struct{}

func (NopObserver) Arrived(uint64, timing.Time, int, int)                          {}
func (NopObserver) Routed(uint64, Role, int, int, timing.Time, int)                {}
func (NopObserver) Admitted(uint64, Role, timing.Time, int, bool)                  {}
func (NopObserver) Parked(uint64, timing.Time)                                     {}
func (NopObserver) PassStarted(int, *engine.Pass)                                  {}
func (NopObserver) PassEnded(int, *engine.Pass)                                    {}
func (NopObserver) Token(uint64, timing.Time, timing.Time, uint32)                 {}
func (NopObserver) Prefilled(uint64, timing.Time)                                  {}
func (NopObserver) TransferStarted(uint64, timing.Time, timing.Time, int, float64) {}
func (NopObserver) TransferDone(uint64, timing.Time)                               {}
func (NopObserver) Terminal(uint64, timing.Time, string)                           {}
func (NopObserver) Worker(int, int, WorkerChange, timing.Time)                     {}

// observers is the loop's fan-out of one fact: the collector, which every
// run has, by a direct call, then the others in attach order. Pass and
// token facts come once per pass and per token (millions per run), so
// they go only to the observers attached to hear them: a run without a
// planner or a live driver pays a length test for them, no call.
type observers struct {
	col    collect
	rest   []Observer // every attached observer: the rare facts
	passes []Observer // those hearing Admitted, Parked, PassStarted, PassEnded
	tokens []Observer // those hearing Token
}

// hears is the set of frequent facts an attached observer hears; every
// observer hears the rare ones (arrivals, routing, terminals, transfers,
// worker changes).
type hears uint8

const (
	hearPasses hears = 1 << iota // Admitted, Parked, PassStarted, PassEnded
	hearTokens                   // Token
	hearAll    = hearPasses | hearTokens
)

// attach adds x, which hears the frequent facts h.
func (o *observers) attach(x Observer, h hears) {
	o.rest = append(o.rest, x)
	if h&hearPasses != 0 {
		o.passes = append(o.passes, x)
	}
	if h&hearTokens != 0 {
		o.tokens = append(o.tokens, x)
	}
}

func (o *observers) Arrived(id uint64, at timing.Time, input, output int) {
	o.col.Arrived(id, at, input, output)
	for _, x := range o.rest {
		x.Arrived(id, at, input, output)
	}
}

func (o *observers) Routed(id uint64, role Role, worker, rank int, at timing.Time, overlap int) {
	o.col.Routed(id, role, worker, rank, at, overlap)
	for _, x := range o.rest {
		x.Routed(id, role, worker, rank, at, overlap)
	}
}

func (o *observers) Admitted(id uint64, role Role, at timing.Time, reused int, again bool) {
	o.col.Admitted(id, role, at, reused, again)
	for _, x := range o.passes {
		x.Admitted(id, role, at, reused, again)
	}
}

func (o *observers) Parked(id uint64, at timing.Time) {
	o.col.Parked(id, at)
	for _, x := range o.passes {
		x.Parked(id, at)
	}
}

// passStarted tells the pass observers other than the
// collector, which the loop calls directly (a per-pass fact).
func (o *observers) passStarted(w int, p *engine.Pass) {
	for _, x := range o.passes {
		x.PassStarted(w, p)
	}
}

// passEnded tells the pass observers other than the
// collector, which the loop calls directly (a per-pass fact).
func (o *observers) passEnded(w int, p *engine.Pass) {
	for _, x := range o.passes {
		x.PassEnded(w, p)
	}
}

// The per-pass and per-token facts have no fan-out method: the loop calls
// the collector directly (for a token, its count is the first-token
// test), then passStarted, passEnded or tokenRest only if anything else
// hears them, so a run without such an observer pays one length test.

// tokenRest tells the token observers other than the collector.
func (o *observers) tokenRest(id uint64, start, end timing.Time, token uint32) {
	for _, x := range o.tokens {
		x.Token(id, start, end, token)
	}
}

func (o *observers) Prefilled(id uint64, at timing.Time) {
	o.col.Prefilled(id, at)
	for _, x := range o.rest {
		x.Prefilled(id, at)
	}
}

func (o *observers) TransferStarted(id uint64, start, end timing.Time, tokens int, bytes float64) {
	o.col.TransferStarted(id, start, end, tokens, bytes)
	for _, x := range o.rest {
		x.TransferStarted(id, start, end, tokens, bytes)
	}
}

func (o *observers) TransferDone(id uint64, at timing.Time) {
	o.col.TransferDone(id, at)
	for _, x := range o.rest {
		x.TransferDone(id, at)
	}
}

func (o *observers) Terminal(id uint64, at timing.Time, reason string) {
	o.col.Terminal(id, at, reason)
	for _, x := range o.rest {
		x.Terminal(id, at, reason)
	}
}

func (o *observers) Worker(w, pool int, change WorkerChange, at timing.Time) {
	o.col.Worker(w, pool, change, at)
	for _, x := range o.rest {
		x.Worker(w, pool, change, at)
	}
}
