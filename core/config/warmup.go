package config

import (
	"fmt"
	"math"
)

// Warmup is a warm-up phase: its requests run like any other (they fill
// the KV cache and the batch) but the report leaves them out of its
// latency and throughput figures, as AIPerf leaves out the records of its
// warmup phase (benchmark_phase "warmup"; ai-dynamo/aiperf,
// docs/tutorials/warmup.md). One of the two, or neither (no warm-up):
//   - Requests: the first N requests released (release order);
//   - Seconds: the requests that arrive before S simulated seconds.
type Warmup struct {
	Requests int     `yaml:"requests" json:"requests"`
	Seconds  float64 `yaml:"seconds" json:"seconds"`
}

// On reports whether the run has a warm-up phase.
func (w Warmup) On() bool { return w.Requests > 0 || w.Seconds > 0 }

func (w Warmup) validate() error {
	switch {
	case w.Requests < 0:
		return fmt.Errorf("traffic.warmup.requests: must be ≥ 0, got %d", w.Requests)
	case w.Requests > MaxRequests:
		return fmt.Errorf("traffic.warmup.requests: must be ≤ %d, got %d", MaxRequests, w.Requests)
	case !(w.Seconds >= 0) || math.IsInf(w.Seconds, 0):
		return fmt.Errorf("traffic.warmup.seconds: must be a finite number ≥ 0, got %v", w.Seconds)
	case w.Seconds > MaxIntervalMs/1000:
		return fmt.Errorf("traffic.warmup.seconds: must be ≤ %g, got %v", MaxIntervalMs/1000, w.Seconds)
	case w.Requests > 0 && w.Seconds > 0:
		return fmt.Errorf("traffic.warmup: give requests or seconds, not both (got requests: %d, seconds: %v)", w.Requests, w.Seconds)
	}
	return nil
}
