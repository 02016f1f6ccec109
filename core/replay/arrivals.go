package replay

import (
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
