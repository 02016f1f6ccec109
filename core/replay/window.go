package replay

import (
	"math"

	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/planner"
	"github.com/dynosim/dynosim-web/timing"
)

// The planner's view of the traffic: its scaleState observes the loop's
// facts like the collector does, and hands the window of one tick
// interval to the planner at the tick (scale.go).

// trafficWindow accumulates the traffic of one tick interval.
type trafficWindow struct {
	since                timing.Time
	requests             int
	isl, osl             float64
	prompt, reused       int
	ttft, itl            float64
	ttftN, itlN          int
	accepted, decodeFwds int
}

// done closes the window at now into the planner's Traffic.
func (w *trafficWindow) done(now timing.Time) planner.Traffic {
	t := planner.Traffic{IntervalS: (now - w.since).Ms() / 1000, Requests: w.requests,
		MeanISL: math.NaN(), MeanOSL: math.NaN(), KVHitRate: math.NaN(), AcceptLength: math.NaN(), MeanTTFTMs: math.NaN(), MeanITLMs: math.NaN()}
	if w.requests > 0 {
		t.MeanISL, t.MeanOSL = w.isl/float64(w.requests), w.osl/float64(w.requests)
	}
	if w.prompt > 0 {
		t.KVHitRate = float64(w.reused) / float64(w.prompt)
	}
	if w.decodeFwds > 0 {
		t.AcceptLength = float64(w.accepted) / float64(w.decodeFwds)
	}
	if w.ttftN > 0 {
		t.MeanTTFTMs = w.ttft / float64(w.ttftN)
	}
	if w.itlN > 0 {
		t.MeanITLMs = w.itl / float64(w.itlN)
	}
	return t
}

// An arrival, a pass end and a worker becoming ready are activity: a tick
// after none of them that changes nothing is quiet (scaleState).

func (s *scaleState) Arrived(uint64, timing.Time, int, int) { s.activity++ }

func (s *scaleState) Worker(_, _ int, change WorkerChange, _ timing.Time) {
	if change == ChangeReady {
		s.activity++
	}
}

// Admitted counts a request's prompt and prefix-cache reuse at its first
// admission (the decode side's is not the request's).
func (s *scaleState) Admitted(id uint64, role Role, _ timing.Time, reused int, again bool) {
	if role == Decode || again {
		return
	}
	s.traffic.prompt += s.l.reqs.at(id).turn.Input
	s.traffic.reused += reused
}

// PassEnded records worker w's finished pass for the planner.
func (s *scaleState) PassEnded(w int, p *engine.Pass) {
	s.activity++
	for len(s.fpm) <= w {
		s.fpm = append(s.fpm, engine.FPM{})
	}
	s.fpm[w] = p.FPM
	f := &p.FPM
	pool := s.l.ws[w].pool
	s.passes[pool] = append(s.passes[pool], planner.PassSample{Worker: w, EndMs: p.End.Ms(), Ms: (p.End - p.Start).Ms(),
		PrefillRequests: f.PrefillRequests, PrefillTokens: f.PrefillTokens, PrefillKVTokens: f.PrefillKVTokens,
		DecodeRequests: f.DecodeRequests, DecodeKVTokens: f.DecodeKVTokens})
	s.traffic.accepted += p.Counters.AcceptedTokens
	s.traffic.decodeFwds += p.Counters.DecodeForwards
}

// lastFPM is worker w's last pass's FPM (zero before its first pass).
func (s *scaleState) lastFPM(w int) engine.FPM {
	if w < len(s.fpm) {
		return s.fpm[w]
	}
	return engine.FPM{}
}

// Terminal adds a completed request to the tick's traffic.
func (s *scaleState) Terminal(id uint64, now timing.Time, why string) {
	if why != "" {
		return
	}
	r := s.l.reqs.at(id)
	t := r.turn
	w := &s.traffic
	w.requests++
	w.isl += float64(t.Input)
	w.osl += float64(t.Output)
	if t.Output > 0 { // it had a first token
		w.ttft += (r.first - r.arrival).Ms()
		w.ttftN++
		if t.Output > 1 {
			w.itl += (now - r.first).Ms() / float64(t.Output-1)
			w.itlN++
		}
	}
}

var _ Observer = (*scaleState)(nil)
