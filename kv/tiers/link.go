// Package tiers is KVBM's lower KV tiers (spec §5): a per-worker G2 host
// pool, a G3 disk pool and a G4 object store shared by the workers of one
// pool, and the directional links between them, each a deterministic
// processor-sharing model. It moves block metadata, never payload bytes.
//
// A System is one pool's tiers; each engine core joins it as a Worker. The
// engine hands the worker the blocks its G1 evicts (offload), asks it for
// lower-tier prefix hits at admission (onboarding), and ticks it at every
// pass start, when finished copies free G1 slots and release parked
// requests. Transfers complete in one global time order across all links,
// so a copy chained from a finished one (G1→G2 then G2→G3; G3→G2 then
// G2→G1) starts at the instant the first one ended.
package tiers

import "math"

// Link is one directional link (spec §5.2): concurrent transfers share its
// bandwidth equally and speed up as peers finish. Times are milliseconds.
type Link struct {
	rate   float64 // bytes per ms; +Inf: transfers complete at once
	active []transfer
	last   float64 // last_update_ms
	busy   float64 // ms with at least one active transfer
	done   []Done  // completed since the last Drain
	onBusy func(from, to float64)
}

type transfer struct {
	id  uint64
	rem float64 // remaining bytes
	job int32
}

// Done is a completed transfer.
type Done struct {
	ID  uint64
	At  float64 // ms
	Job int32
}

// eps is the slack under which a transfer counts as finished (spec §5.2).
const eps = 1e-9

// NewLink returns a link of gbps × 10^9 bytes/s; gbps ≤ 0 is infinite.
func NewLink(gbps float64) *Link {
	l := &Link{rate: math.Inf(1)}
	if gbps > 0 {
		l.rate = float64(gbps * 1e6)
	}
	return l
}

// Start enters a transfer of bytes at now (clamped up to the link's last
// update; the link is advanced to now first, and what that completes
// waits in Drain).
func (l *Link) Start(now float64, id uint64, bytes float64, job int32) {
	l.advance(now)
	if math.IsInf(l.rate, 1) {
		bytes = 0
	}
	l.active = append(l.active, transfer{id: id, rem: bytes, job: job})
}

// BusyMs is the time the link has carried at least one transfer.
func (l *Link) BusyMs() float64 { return l.busy }

// Drain returns the transfers completed so far, in completion order, and
// empties the list (the slice is reused).
func (l *Link) Drain() []Done {
	d := l.done
	l.done = l.done[:0]
	return d
}

// AdvanceTo moves the link to now and returns what completed by then.
func (l *Link) AdvanceTo(now float64) []Done {
	l.advance(now)
	return l.Drain()
}

// advance runs processor sharing up to now: the smallest remaining
// transfer finishes after N × r_min / B, the others go on at B/(N−1). A
// now before the last update is a no-op (replay clocks may rewind).
func (l *Link) advance(now float64) {
	if now < l.last {
		return
	}
	for {
		n := len(l.active)
		if n == 0 {
			l.last = now
			return
		}
		rate := l.rate / float64(n)
		m := 0
		for i := 1; i < n; i++ {
			if l.active[i].rem < l.active[m].rem {
				m = i
			}
		}
		next := l.last
		if !math.IsInf(rate, 1) {
			next = l.last + l.active[m].rem/rate
		}
		if next > now+eps {
			l.drain(now, rate)
			return
		}
		l.drain(next, rate)
		t := l.active[m]
		l.done = append(l.done, Done{ID: t.id, At: next, Job: t.job})
		// Swap-remove, as the reference does: among equal remainders the
		// next completion follows the swapped order.
		l.active[m] = l.active[n-1]
		l.active = l.active[:n-1]
	}
}

// drain moves every active transfer on to t at rate each.
func (l *Link) drain(t, rate float64) {
	dt := t - l.last
	if dt <= 0 {
		l.last = max(l.last, t)
		return
	}
	if !math.IsInf(rate, 1) {
		d := float64(dt * rate)
		for i := range l.active {
			l.active[i].rem = max(0, l.active[i].rem-d)
		}
	}
	if l.onBusy != nil {
		l.onBusy(l.last, t)
	}
	l.busy += dt
	l.last = t
}

// Deadline is transfer id's completion time if nothing else starts:
// last + Σ_j min(r_j, r)/B. ok is false for an unknown id.
func (l *Link) Deadline(id uint64) (at float64, ok bool) {
	for _, t := range l.active {
		if t.id == id {
			return l.deadline(t.rem), true
		}
	}
	return 0, false
}

func (l *Link) deadline(r float64) float64 {
	if math.IsInf(l.rate, 1) {
		return l.last
	}
	sum := 0.0
	for _, t := range l.active {
		sum += min(t.rem, r)
	}
	return l.last + sum/l.rate
}

// Earliest is the earliest completion among the active transfers.
func (l *Link) Earliest() (at float64, ok bool) {
	if len(l.active) == 0 {
		return 0, false
	}
	r := l.active[0].rem
	for _, t := range l.active[1:] {
		r = min(r, t.rem)
	}
	rate := l.rate / float64(len(l.active))
	if math.IsInf(rate, 1) {
		return l.last, true
	}
	// The very expression advance uses, so advancing to it completes it.
	return l.last + r/rate, true
}
