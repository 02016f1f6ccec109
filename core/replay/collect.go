package replay

import (
	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/report"
	"github.com/dynosim/dynosim-web/timing"
)

// collect is the report collector as an Observer: it turns the loop's
// facts into the collector's records. The collector (core/report) knows
// nothing of engines or roles; this is where a decode pool's routing and
// admission become its decode placement and decode-side reuse, and a
// pass becomes a load sample and the watched request's timeline.
type collect struct{ c *report.Collector }

func (o collect) Arrived(id uint64, at timing.Time, input, output int) {
	o.c.Arrive(id, at, input, output)
}

func (o collect) Routed(id uint64, role Role, worker, rank int, at timing.Time, overlap int) {
	if role == Decode {
		o.c.Decode(id, worker, rank, at)
		return
	}
	o.c.Route(id, worker, rank, at, overlap)
}

func (o collect) Admitted(id uint64, role Role, at timing.Time, reused int, again bool) {
	if role == Decode {
		// The prompt was computed on prefill; what the decode side had
		// cached is reported apart.
		o.c.DecodeReuse(id, reused)
		return
	}
	o.c.Admit(id, at, reused, again)
}

func (o collect) Parked(id uint64, at timing.Time) { o.c.Park(id, at) }

// PassStarted samples the worker's load right after the pass's
// scheduling decisions.
func (o collect) PassStarted(w int, p *engine.Pass) {
	if m := &p.Metrics; m.TotalBlocks > 0 {
		o.c.Series.Sample(w, p.Start, m.Running, m.Waiting, float64(m.ActiveBlocks)/float64(m.TotalBlocks))
	}
}

func (o collect) PassEnded(w int, p *engine.Pass) {
	if p.Watched != nil {
		o.watched(w, p)
	}
}

// Token is here for the interface: the fan-out calls the collector's
// Token itself, for its count (observers.Token).
func (o collect) Token(id uint64, start, end timing.Time, _ uint32) { o.c.Token(id, start, end) }

func (o collect) Prefilled(id uint64, at timing.Time) { o.c.PrefillDone(id, at) }

func (o collect) TransferStarted(id uint64, start, end timing.Time, tokens int, bytes float64) {
	o.c.Transfer(id, start, end, tokens, bytes)
}

func (collect) TransferDone(uint64, timing.Time) {}

func (o collect) Terminal(id uint64, at timing.Time, reason string) { o.c.Terminal(id, at, reason) }

func (o collect) Worker(_, _ int, change WorkerChange, _ timing.Time) {
	if change == ChangeAdded {
		o.c.Series.AddWorker()
	}
}

// watched records worker i's pass p in the watched request's timeline:
// what it computed for the request, or its preemption.
func (o collect) watched(i int, p *engine.Pass) {
	w, id := *p.Watched, o.c.Watching()
	if w.Preempted {
		o.c.WatchedPass(report.TimelineEvent{At: p.Start, Event: "preempted", Worker: &i, DPRank: &w.Rank})
	}
	if !w.In {
		return
	}
	tokens := 0
	for _, s := range p.Signals {
		if s.ID == id && s.HasToken {
			tokens++
		}
	}
	o.c.WatchedPass(report.TimelineEvent{At: p.Start, End: p.End, Worker: &i, DPRank: &w.Rank,
		BatchRequests: w.Batch, PrefillTokens: w.PrefillTokens, DecodeTokens: w.DecodeTokens, Tokens: tokens})
}

var _ Observer = collect{}
