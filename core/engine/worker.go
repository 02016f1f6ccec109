package engine

import (
	"fmt"

	"github.com/dynosim/dynosim-web/timing"
)

// Worker is one engine instance of several ranks (data-parallel attention
// ranks, pipeline virtual engines). Its ranks step in lanes: the ranks of
// one lane step behind a shared barrier, so a lane's pass ends when its
// slowest rank does and the outputs of all its ranks become visible
// together; lanes have their own pass clocks. Rank r is in lane
// r mod Lanes().
//
// One lane of every rank is the lock-step of MoE data parallelism (every
// rank joins each step's expert all-to-all; vLLM's DP coordinator runs
// dummy batches on idle ranks) and the reference mocker's model of every
// DP worker. One lane per rank is vLLM's dense data parallelism, whose
// ranks are independent engine cores (vllm/v1/engine/core.py: only MoE
// models run DPEngineCoreProc's synchronised step loop).
type Worker struct {
	Ranks []Rank
	lanes []Pass // each lane's merged pass, reused by its next step
	// last is each lane's latest pass as StepLane returned it, and parts
	// the rank passes it is made of (RankPasses).
	last  []*Pass
	parts [][]RankPass
}

// RankPass is one rank's own pass within a lane's pass.
type RankPass struct {
	Rank int
	Pass *Pass
}

// NewWorker returns a worker of ranks cores in one lock-step lane.
func NewWorker(cfg Config, ranks int) (*Worker, error) { return NewLanedWorker(cfg, ranks, 1) }

// NewLanedWorker returns a worker of ranks cores built from cfg, stepping
// in lanes lanes (lanes must divide ranks); rank r gets DPRank r and its
// own output-token stream.
func NewLanedWorker(cfg Config, ranks, lanes int) (*Worker, error) {
	if ranks < 1 {
		return nil, fmt.Errorf("attention_data: must be ≥ 1, got %d", ranks)
	}
	if lanes < 1 || ranks%lanes != 0 {
		return nil, fmt.Errorf("engine: %d lanes do not divide %d ranks", lanes, ranks)
	}
	w := &Worker{lanes: make([]Pass, lanes)}
	for r := range ranks {
		rc := cfg
		rc.DPRank = r
		rc.Seed = cfg.Seed + uint64(r)
		c, err := NewRank(rc)
		if err != nil {
			return nil, err
		}
		w.Ranks = append(w.Ranks, c)
	}
	return w, nil
}

// Lanes is the number of lanes.
func (w *Worker) Lanes() int { return len(w.lanes) }

// LaneOf is the lane of rank r.
func (w *Worker) LaneOf(r int) int { return r % len(w.lanes) }

// Empty reports whether no rank holds requests.
func (w *Worker) Empty() bool {
	for _, c := range w.Ranks {
		if !c.Empty() {
			return false
		}
	}
	return true
}

// Step runs one pass of a one-lane worker (StepLane 0).
func (w *Worker) Step(now timing.Time) *Pass { return w.StepLane(now, 0) }

// StepLane runs one pass on every rank of lane k that has work and merges
// the results, lower rank first. The returned pass is reused by the
// lane's next step. A lane of one rank returns that rank's own pass.
func (w *Worker) StepLane(now timing.Time, k int) *Pass {
	n := len(w.lanes)
	if w.last == nil {
		w.last, w.parts = make([]*Pass, n), make([][]RankPass, n)
	}
	parts := w.parts[k][:0]
	if len(w.Ranks) == n {
		p := w.Ranks[k].Step(now)
		// A rank returns the same *Pass every time: after the first pass
		// the record is already right, and rewriting it per pass (pointer
		// stores, with their write barriers) showed (issue 34 item 1).
		if w.last[k] != p || len(w.parts[k]) != 1 || w.parts[k][0] != (RankPass{k, p}) {
			w.last[k], w.parts[k] = p, append(parts, RankPass{k, p})
		}
		return p
	}
	m := &w.lanes[k]
	w.last[k] = m
	*m = Pass{Start: now, End: now, Signals: m.Signals[:0], Admissions: m.Admissions[:0], Events: m.Events[:0], Reserved: m.Reserved[:0]}
	for r := k; r < len(w.Ranks); r += n {
		c := w.Ranks[r]
		if c.Empty() {
			continue
		}
		p := c.Step(now)
		parts = append(parts, RankPass{r, p})
		m.End = max(m.End, p.End)
		m.Signals = append(m.Signals, p.Signals...)
		m.Admissions = append(m.Admissions, p.Admissions...)
		m.Events = append(m.Events, p.Events...)
		m.Reserved = append(m.Reserved, p.Reserved...)
		m.Busy = m.Busy || p.Busy
		if p.Watched != nil {
			m.Watched = p.Watched
		}
		m.Counters.add(p.Counters)
	}
	m.Metrics = w.LaneMetrics(k)
	w.parts[k] = parts
	return m
}

// RankPasses returns the rank passes p is made of, lower rank first, p
// being a lane's latest pass (StepLane's result, not stepped again since):
// a lane of one rank gives p itself, a merged pass the passes of the ranks
// that had work. Per-rank results a merged pass sums or drops (its FPM
// snapshot is zero) are read there, e.g. by the live server's
// forward-pass metrics, one message per rank. nil for any other pass.
func (w *Worker) RankPasses(p *Pass) []RankPass {
	for k, q := range w.last {
		if q == p {
			return w.parts[k]
		}
	}
	return nil
}

// Metrics sums the ranks' load.
func (w *Worker) Metrics() Metrics { return w.sum(0, 1) }

// LaneMetrics sums the load of lane k's ranks.
func (w *Worker) LaneMetrics(k int) Metrics { return w.sum(k, len(w.lanes)) }

func (w *Worker) sum(from, stride int) Metrics {
	var m Metrics
	for r := from; r < len(w.Ranks); r += stride {
		x := w.Ranks[r].Metrics()
		m.Running += x.Running
		m.Waiting += x.Waiting
		m.ActiveBlocks += x.ActiveBlocks
		m.TotalBlocks += x.TotalBlocks
		m.Preemptions += x.Preemptions
		m.Holds += x.Holds
		m.Reserved += x.Reserved
		m.Counters.add(x.Counters)
	}
	return m
}
