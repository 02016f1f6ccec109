package engine

import (
	"fmt"

	"github.com/dynosim/dynosim-web/timing"
)

// Worker is one engine instance with dp_size data-parallel attention ranks.
// Each rank is an independent core; in offline replay the ranks step behind
// a shared barrier, so a worker pass ends when its slowest rank does and the
// outputs of all ranks become visible together.
type Worker struct {
	Ranks []Rank
	pass  Pass
}

// NewWorker returns a worker of ranks cores built from cfg; rank r gets
// DPRank r and its own output-token stream.
func NewWorker(cfg Config, ranks int) (*Worker, error) {
	if ranks < 1 {
		return nil, fmt.Errorf("attention_data: must be ≥ 1, got %d", ranks)
	}
	w := &Worker{}
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

// Empty reports whether no rank holds requests.
func (w *Worker) Empty() bool {
	for _, c := range w.Ranks {
		if !c.Empty() {
			return false
		}
	}
	return true
}

// Step runs one pass on every rank that has work and merges the results,
// lower rank first. The returned pass is reused by the next Step.
func (w *Worker) Step(now timing.Time) *Pass {
	if len(w.Ranks) == 1 {
		return w.Ranks[0].Step(now)
	}
	m := &w.pass
	*m = Pass{Start: now, End: now, Signals: m.Signals[:0], Admissions: m.Admissions[:0], Events: m.Events[:0], Reserved: m.Reserved[:0]}
	for _, c := range w.Ranks {
		if c.Empty() {
			continue
		}
		p := c.Step(now)
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
	m.Metrics = w.Metrics()
	return m
}

// Metrics sums the ranks' load.
func (w *Worker) Metrics() Metrics {
	var m Metrics
	for _, c := range w.Ranks {
		r := c.Metrics()
		m.Running += r.Running
		m.Waiting += r.Waiting
		m.ActiveBlocks += r.ActiveBlocks
		m.TotalBlocks += r.TotalBlocks
		m.Preemptions += r.Preemptions
		m.Holds += r.Holds
		m.Reserved += r.Reserved
		m.Counters.add(r.Counters)
	}
	return m
}
