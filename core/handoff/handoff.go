// Package handoff is the pure state machine of one coordinated prefill→decode
// KV handoff (spec mocker.md §7.4–7.5): the source holds its KV, the
// destination reserves capacity, the transfer runs, the destination activates
// and the source releases. It does no I/O, keeps no time and does not
// allocate: the driver (an event loop) feeds facts and performs the actions
// it gets back, reporting each applied action as its matching fact.
//
// Driver contract: every returned action must be performed and reported
// (SubmitPrefill -> SourceHeld, ReserveDestination -> DestinationReserved,
// StartTransfer -> TransferCompleted, ActivateDestination ->
// DestinationActivated, ReleaseSource -> SourceReleased, CancelSource ->
// SourceCleaned, CancelDestination -> DestinationCleaned). Once Complete is
// returned the machine is Done and rejects every fact, so the driver must
// drop events still scheduled for it (e.g. a transfer timer).
package handoff

import (
	"errors"
	"strconv"
)

// Order is who moves first.
type Order uint8

const (
	SourceFirst      Order = iota // vLLM (and TRT-LLM): prefill runs, then the destination reserves
	DestinationFirst              // SGLang: the destination reserves, then prefill runs
)

// Fact is something the driver observed or applied.
type Fact uint8

const (
	SourceHeld           Fact = iota + 1 // prefill finished and holds its KV
	DestinationReserved                  // decode side accepted and reserved KV capacity
	TransferCompleted                    // the modeled transfer delay elapsed
	DestinationActivated                 // the driver applied ActivateDestination
	SourceReleased                       // the driver applied ReleaseSource
	Failed                               // either side failed (e.g. a request that can never fit)
	TimedOut
	Canceled
	SourceCleaned      // the driver applied CancelSource
	DestinationCleaned // the driver applied CancelDestination
)

// Action is something the driver must do.
type Action uint8

const (
	SubmitPrefill Action = iota + 1
	ReserveDestination
	StartTransfer // the driver computes the delay (from the tokens the destination misses)
	ActivateDestination
	ReleaseSource
	CancelSource
	CancelDestination
	Complete // the handoff is over; Machine.Outcome tells Success or Canceled
)

// Outcome is how the handoff ended.
type Outcome uint8

const (
	OutcomePending  Outcome = iota // not Done yet
	OutcomeSuccess                 // the destination owns the request, the source released
	OutcomeCanceled                // a failure/timeout/cancel ended it; all holds were cleaned
)

// Errors are sentinels so that rejecting a fact does not allocate either.
var (
	ErrDone       = errors.New("handoff: fact after Complete")
	ErrImpossible = errors.New("handoff: fact impossible in the current state")
)

// Actions is a fixed-size list so that Apply returns by value without
// allocating; no transition yields more than two actions.
type Actions struct {
	n uint8
	a [3]Action
}

// Len is the number of actions.
func (a Actions) Len() int { return int(a.n) }

// At returns the i-th action, in the order the driver should perform them.
func (a Actions) At(i int) Action {
	if i < 0 || i >= int(a.n) {
		panic("handoff: Actions index out of range")
	}
	return a.a[i]
}

type flags uint16

// One bit per action issued and per fact arrived: a fact is possible exactly
// when its causing action was issued and the fact has not arrived yet.
const (
	srcIssued flags = 1 << iota // SubmitPrefill returned: the prefill runs, then holds
	held
	dstIssued // ReserveDestination returned
	reserved
	xferStarted
	xferDone
	actIssued
	activated
	relIssued
	released
	srcCanceled
	srcCleaned
	dstCanceled
	dstCleaned
	cleanup // a failure fact arrived
	done    // Complete returned
)

var issues = [...]flags{
	SubmitPrefill: srcIssued, ReserveDestination: dstIssued, StartTransfer: xferStarted,
	ActivateDestination: actIssued, ReleaseSource: relIssued, CancelSource: srcCanceled,
	CancelDestination: dstCanceled, Complete: done,
}

// arrivals maps a non-failure fact to the action bit it needs and its own bit.
var arrivals = [...]struct{ cause, self flags }{
	SourceHeld: {srcIssued, held}, DestinationReserved: {dstIssued, reserved},
	TransferCompleted: {xferStarted, xferDone}, DestinationActivated: {actIssued, activated},
	SourceReleased: {relIssued, released}, SourceCleaned: {srcCanceled, srcCleaned},
	DestinationCleaned: {dstCanceled, dstCleaned},
}

// Machine is one handoff: a 4-byte comparable value the driver keeps per
// request. The zero value is not started; use Start.
type Machine struct {
	f     flags
	order Order
	out   Outcome
}

// Start begins a handoff in the given order and returns its first action.
// It panics on an unknown Order, which is a programming error.
func Start(o Order) (Machine, Actions) {
	m := Machine{order: o}
	var acts Actions
	switch o {
	case SourceFirst:
		m.issue(&acts, SubmitPrefill)
	case DestinationFirst:
		m.issue(&acts, ReserveDestination)
	default:
		panic("handoff: unknown Order " + o.String())
	}
	return m, acts
}

func (m *Machine) issue(acts *Actions, a Action) {
	m.f |= issues[a]
	acts.a[acts.n] = a
	acts.n++
}

// Apply feeds one fact and returns the actions to perform. An impossible
// fact returns ErrImpossible (or ErrDone after Complete) and leaves the
// machine unchanged.
//
// In cleanup mode (after Failed, TimedOut or Canceled) a further failure fact
// is ignored (no error, no actions): the cleanup already issued covers it, and
// independent timers may well race. Facts of actions issued before the failure
// (still in flight) are accepted without new actions, because the cancels
// already cover them; only the end of the last hold/reservation completes.
func (m *Machine) Apply(f Fact) (Actions, error) {
	var acts Actions
	if m.f&done != 0 {
		return acts, ErrDone
	}
	if f == Failed || f == TimedOut || f == Canceled {
		if m.f&cleanup == 0 {
			m.f |= cleanup
			m.startCleanup(&acts)
		}
		return acts, nil
	}
	if int(f) >= len(arrivals) || arrivals[f].cause == 0 {
		return acts, ErrImpossible
	}
	ar := arrivals[f]
	if m.f&ar.cause == 0 || m.f&ar.self != 0 {
		return acts, ErrImpossible
	}
	m.f |= ar.self
	if m.f&cleanup != 0 {
		m.finishCleanup(&acts)
		return acts, nil
	}
	switch f {
	case SourceHeld, DestinationReserved:
		if f == SourceHeld && m.order == SourceFirst {
			m.issue(&acts, ReserveDestination)
		} else if f == DestinationReserved && m.order == DestinationFirst {
			m.issue(&acts, SubmitPrefill)
		} else if m.f&(held|reserved) == held|reserved { // whichever arrived second
			m.issue(&acts, StartTransfer)
		}
	case TransferCompleted:
		m.issue(&acts, ActivateDestination)
	case DestinationActivated:
		m.issue(&acts, ReleaseSource)
	case SourceReleased:
		m.out = OutcomeSuccess
		m.issue(&acts, Complete)
	}
	return acts, nil
}

// startCleanup cancels every side that still needs it. A side whose release
// (source) or activation (destination) was already issued is not canceled:
// after activation the request belongs to the destination, and a pending
// ReleaseSource already frees the source, so canceling would double-free.
// Those sides end by their in-flight fact instead.
func (m *Machine) startCleanup(acts *Actions) {
	if m.f&(srcIssued|relIssued) == srcIssued {
		m.issue(acts, CancelSource)
	}
	if m.f&(dstIssued|actIssued) == dstIssued {
		m.issue(acts, CancelDestination)
	}
	m.finishCleanup(acts)
}

func (m *Machine) finishCleanup(acts *Actions) {
	if !m.Holding() && !m.Reserved() {
		m.out = OutcomeCanceled
		m.issue(acts, Complete)
	}
}

// Outcome is OutcomePending until Complete was returned.
func (m *Machine) Outcome() Outcome { return m.out }

// Done reports whether Complete was returned.
func (m *Machine) Done() bool { return m.f&done != 0 }

// Holding reports whether the source side exists: SubmitPrefill was issued
// (a running prefill counts, it will hold) and it was neither released nor
// cleaned. The driver checks that no hold survives the handoff.
func (m *Machine) Holding() bool {
	return m.f&srcIssued != 0 && m.f&(released|srcCleaned) == 0
}

// Reserved reports whether a destination reservation exists: ReserveDestination
// was issued and the destination was neither activated (the reservation then
// became its request) nor cleaned.
func (m *Machine) Reserved() bool {
	return m.f&dstIssued != 0 && m.f&(activated|dstCleaned) == 0
}

var (
	orderNames   = [...]string{SourceFirst: "SourceFirst", DestinationFirst: "DestinationFirst"}
	factNames    = [...]string{"", "SourceHeld", "DestinationReserved", "TransferCompleted", "DestinationActivated", "SourceReleased", "Failed", "TimedOut", "Canceled", "SourceCleaned", "DestinationCleaned"}
	actionNames  = [...]string{"", "SubmitPrefill", "ReserveDestination", "StartTransfer", "ActivateDestination", "ReleaseSource", "CancelSource", "CancelDestination", "Complete"}
	outcomeNames = [...]string{"Pending", "Success", "Canceled"}
)

func name(names []string, v uint8, kind string) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return kind + "(" + strconv.Itoa(int(v)) + ")"
}

func (o Order) String() string   { return name(orderNames[:], uint8(o), "Order") }
func (f Fact) String() string    { return name(factNames[:], uint8(f), "Fact") }
func (a Action) String() string  { return name(actionNames[:], uint8(a), "Action") }
func (o Outcome) String() string { return name(outcomeNames[:], uint8(o), "Outcome") }

// String lists the actions, for test messages.
func (a Actions) String() string {
	s := "["
	for i := 0; i < a.Len(); i++ {
		if i > 0 {
			s += " "
		}
		s += a.At(i).String()
	}
	return s + "]"
}
