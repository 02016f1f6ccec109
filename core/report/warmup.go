package report

import "github.com/dynosim/dynosim-web/timing"

// Warmup is traffic.warmup as the collector applies it: the first Requests
// requests, or those that arrive before Until, run like any other but the
// report leaves them out of its outcomes, latency distributions, ITL,
// goodput and TTFT breakdown, as AIPerf drops its warmup-phase records
// from every metric (ai-dynamo/aiperf, docs/tutorials/warmup.md). The
// report's duration and rates are measured from the end of the warm-up:
// Until, or the arrival of the first measured request, as AIPerf's
// benchmark duration starts with its profiling phase. The per-worker
// counters, pools and time series still cover the whole run.
type Warmup struct {
	Requests int
	Until    timing.Time // 0: no time-based warm-up
}

func (w Warmup) on() bool { return w.Requests > 0 || w.Until > 0 }

// warm reports whether request id (record q) belongs to the warm-up.
func (c *Collector) warm(id uint64, q *record) bool {
	return id <= uint64(c.Warmup.Requests) || q.arrival < c.Warmup.Until
}

// measuredFrom is when the measured window starts: the end of the warm-up.
// Without a measured request it is end, the last terminal (an empty
// window: rates are undefined).
func (c *Collector) measuredFrom(end timing.Time) timing.Time {
	if c.Warmup.Until > 0 {
		return c.Warmup.Until
	}
	for i := range c.recs {
		if q := &c.recs[i]; !c.warm(c.base+uint64(i+1), q) {
			return q.arrival
		}
	}
	return end
}
