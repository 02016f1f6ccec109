package replay

import (
	"fmt"
	"math/rand/v2"

	"github.com/dynosim/dynosim-web/core/workload"
	"github.com/dynosim/dynosim-web/internal/detmath"
	"github.com/dynosim/dynosim-web/timing"
)

// LoadKind selects how sessions start.
type LoadKind uint8

const (
	TraceTimestamps LoadKind = iota // sessions start at their (scaled) trace times
	Concurrency                     // closed loop: at most N sessions in flight
	Poisson                         // exponential gaps at a rate
	ConstantRate                    // fixed gaps
)

// Load configures arrivals.
type Load struct {
	Kind        LoadKind
	Concurrency int
	RatePerSec  float64 // Poisson, ConstantRate (0: burst)
	// RampUp spreads the closed loop's first Concurrency sessions evenly
	// over this span (the k-th starts at k × RampUp / Concurrency), as a
	// benchmark client's workers do; 0 starts them together.
	RampUp  timing.Time
	Speedup float64 // TraceTimestamps: divides start times and turn delays (0 or 1: none)
}

// scale applies the speedup to a trace time or a turn delay.
func (l *Load) scale(t timing.Time) timing.Time {
	if l.Speedup == 0 || l.Kind == Concurrency {
		return t
	}
	return workload.Scale(t, l.Speedup)
}

// arrivals is the arrival source of first turns: it decides when each
// session starts. Follow-up turns are Arrival events in the loop's queue,
// ready at the previous turn's terminal time plus the turn's delay (spec
// §8.4), whatever the load.
type arrivals struct {
	load     Load
	sessions []workload.Session
	order    []int32 // release order of sessions: by start, or file order (concurrency)
	rng      *rand.Rand
	next     int         // next session to start
	nextAt   timing.Time // its start (rate and trace modes)
	inflight int         // sessions started and not finished
}

func newArrivals(wl *workload.Workload, load Load, seed uint64) *arrivals {
	a := &arrivals{load: load, sessions: wl.Sessions, order: wl.ByStart, rng: rand.New(rand.NewPCG(seed, 0x776f726b6c6f6164))} // "workload"
	if load.Kind == Concurrency {
		a.order = nil // timestamps are ignored: file order
	}
	a.nextAt = a.startAfter(0)
	return a
}

// startAfter is the start time of session a.next, the previous one having
// started at prev. Poisson gaps draw from the seeded stream, one per
// session, in start order.
func (a *arrivals) startAfter(prev timing.Time) timing.Time {
	if a.next >= len(a.sessions) {
		return 0
	}
	switch a.load.Kind {
	case TraceTimestamps:
		return a.load.scale(a.sessions[a.session(a.next)].Start)
	case Poisson, ConstantRate:
		if a.next == 0 || a.load.RatePerSec <= 0 {
			return prev
		}
		mean := 1000 / a.load.RatePerSec
		gap := mean
		if a.load.Kind == Poisson {
			gap = float64(-mean * detmath.Log(1-a.rng.Float64())) // u in (0,1]
		}
		return prev + timing.FromMs(gap)
	}
	return prev
}

// peek returns when the next session may start, if one may: in
// concurrency mode, now if a slot is free.
func (a *arrivals) peek(now timing.Time) (timing.Time, bool) {
	if a.next >= len(a.sessions) {
		return 0, false
	}
	if a.load.Kind == Concurrency {
		c := a.clients(now)
		if a.inflight < c {
			return now, true
		}
		if c < a.load.Concurrency { // the next client joins later
			return a.clientStart(c), true
		}
		return now, false
	}
	return a.nextAt, true
}

// clientStart is when the closed loop's k-th client joins.
func (a *arrivals) clientStart(k int) timing.Time {
	return timing.FromNs(float64(a.load.RampUp) * float64(k) / float64(a.load.Concurrency))
}

// clients is how many of the closed loop's clients have joined by now:
// each keeps one session in flight.
func (a *arrivals) clients(now timing.Time) int {
	c := a.load.Concurrency
	if a.load.RampUp <= 0 {
		return c
	}
	// Counted, not divided: clientStart's rounding decides, so a client
	// joins exactly at the time peek promised.
	k := int(float64(now) * float64(c) / float64(a.load.RampUp))
	for k > 0 && a.clientStart(k) > now {
		k--
	}
	for k < c && a.clientStart(k) <= now {
		k++
	}
	return min(k, c)
}

// session is the index of the k-th session to start.
func (a *arrivals) session(k int) int {
	if a.order == nil {
		return k
	}
	return int(a.order[k])
}

// start takes the next session, which peek said may start at at.
func (a *arrivals) start(at timing.Time) int {
	s := a.session(a.next)
	a.next++
	a.inflight++
	a.nextAt = a.startAfter(at)
	return s
}

// finished frees a session's slot (its last turn ended).
func (a *arrivals) finished() { a.inflight-- }

// releaseDue releases the next request due at l.now, if any: a follow-up
// turn before a session starting at the same time.
func (l *Loop) releaseDue() (bool, error) {
	if !l.releasable() {
		return false, nil
	}
	follow := l.q.len() > 0 && l.q.top().kind == Arrival && l.q.top().at <= l.now
	start, ok := l.arr.peek(l.now)
	ok = ok && start <= l.now
	var si, ti int
	var at timing.Time
	switch {
	case follow && (!ok || l.q.top().at <= start):
		e := l.q.pop()
		si, ti, at = int(e.session), int(e.turn), e.at
	case ok:
		si, at = l.arr.start(start), start
	default:
		return false, nil
	}
	l.released++
	t := &l.wl.Sessions[si].Turns[ti]
	if err := l.budget.add(t.Input, t.Output); err != nil {
		return false, err
	}
	id := l.reqs.add(request{turn: t, session: int32(si), index: int32(ti), arrival: at, worker: -1})
	l.obs.Arrived(id, at, t.Input, t.Output)
	if !l.releasable() {
		l.q.drop(Arrival) // the cap is reached: no follow-up will be released
	}
	if l.opt.Frontend > 0 {
		l.q.push(event{at: l.now + l.opt.Frontend, kind: Dispatch, req: id})
		return true, nil
	}
	return true, l.dispatch(id)
}

// finished readies the session's next turn of ended request r, or frees
// its slot.
func (l *Loop) finished(r *request) {
	if l.col.Done() == l.total {
		// After the last request no planner tick or startup is left to
		// run: they would only move the clock past the work, and the
		// GPU-hours with it.
		l.q.drop(PlannerTick)
		l.q.drop(WorkerReady)
	}
	s := &l.wl.Sessions[r.session]
	if next := int(r.index) + 1; next < len(s.Turns) {
		if l.releasable() {
			l.q.push(event{at: l.now + l.opt.Load.scale(s.Turns[next].Delay), kind: Arrival, session: r.session, turn: int32(next)})
		}
		return
	}
	l.arr.finished()
}

// budget enforces Options.MaxPromptTokens and MaxOutputTokens over the
// prompt and output tokens of the released requests.
type budget struct {
	maxPrompt, maxOutput int
	prompt, output       int
}

// add counts a released request's tokens.
func (b *budget) add(prompt, output int) error {
	b.prompt += prompt
	b.output += output
	return b.check(b.prompt, b.output)
}

// check enforces the caps on prompt and output tokens. With both set they
// share one budget: a run may use a mix of the two in proportion (half
// the prompt tokens and half the output tokens, say).
func (b *budget) check(prompt, output int) error {
	mp, mo := b.maxPrompt, b.maxOutput
	if mp > 0 && prompt > mp {
		return fmt.Errorf("%w: the requests' prompts hold at least %d tokens, this service simulates at most %d prompt tokens per run (use the CLI or the page for large runs)", ErrTooLarge, prompt, mp)
	}
	if mo > 0 && output > mo {
		return fmt.Errorf("%w: the requests ask for at least %d output tokens, this service simulates at most %d output tokens per run (use the CLI or the page for large runs)", ErrTooLarge, output, mo)
	}
	if mp > 0 && mo > 0 && float64(prompt)/float64(mp)+float64(output)/float64(mo) > 1 {
		return fmt.Errorf("%w: the requests' %d prompt and %d output tokens (at least) are more work than this service's per-run budget of %d prompt or %d output tokens, or a mix in proportion (use the CLI or the page for large runs)", ErrTooLarge, prompt, output, mp, mo)
	}
	return nil
}
