package planner

import (
	"math"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/timing"
)

// Issue 29 item 11: the minimum-workers message shows the real arithmetic
// (it clamped each factor to max_num_gpus + 1 and printed "10 × 1 = 2"),
// and a sum past int saturates instead of wrapping.
func TestItem11MinWorkersMessage(t *testing.T) {
	fixed := timing.Fixed{Prefill: 100, Decode: 10}
	for _, tc := range []struct {
		maxGPUs int
		pools   []Pool
		want    string
	}{
		{1, []Pool{{Name: "aggregated", GPUsPerWorker: 1, MinWorkers: 10, Model: fixed}},
			"planner.max_num_gpus: 1 GPUs cannot hold the pools' minimum workers (aggregated 10 × 1 = 10 GPUs)"},
		{3, []Pool{{Name: "prefill", GPUsPerWorker: 8, MinWorkers: 5, Model: fixed}, {Name: "decode", GPUsPerWorker: 2, MinWorkers: 7, Model: fixed}},
			"(prefill 5 × 8 + decode 7 × 2 = 54 GPUs)"},
		{8, []Pool{{Name: "prefill", GPUsPerWorker: math.MaxInt / 2, MinWorkers: 3, Model: fixed}, {Name: "decode", GPUsPerWorker: 1, Model: fixed}},
			"(prefill 3 × 4611686018427387903 + decode 1 × 1 = over 9223372036854775807 GPUs)"},
	} {
		c := slaConfig()
		c.MaxGPUs = tc.maxGPUs
		_, err := New(c, tc.pools)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: %v\nwant an error containing %q", err, tc.want)
		}
	}
}

// Issue 29 item 11: the planner refuses an enabled mode's interval under
// MinIntervalS (an interval under 1 ns used to round its first tick to 0
// and disable the planner silently) or over MaxIntervalS, naming the key;
// at the floor its first tick is one second in.
func TestItem11PlannerIntervalFloorInPlanner(t *testing.T) {
	agg := []Pool{{Name: "aggregated", GPUsPerWorker: 1, Model: timing.Polynomial{}}}
	for _, v := range []float64{1e-12, 0.001, 0.999, 1e7 + 1, math.Inf(1), math.NaN()} {
		c := slaConfig()
		c.Throughput, c.Load, c.LoadIntervalS = false, true, v
		if _, err := New(c, agg); err == nil || !strings.Contains(err.Error(), "planner.load_adjustment_interval_seconds: must be") {
			t.Errorf("load interval %v: %v", v, err)
		}
		c = slaConfig()
		c.ThroughputIntervalS = v
		if _, err := New(c, agg); err == nil || !strings.Contains(err.Error(), "planner.throughput_adjustment_interval_seconds: must be") {
			t.Errorf("throughput interval %v: %v", v, err)
		}
	}
	c := slaConfig()
	c.Throughput, c.Load, c.LoadIntervalS = false, true, MinIntervalS
	pl, err := New(c, agg)
	if err != nil {
		t.Fatal(err)
	}
	if got := pl.FirstMs(); got != 1000 {
		t.Errorf("first tick at %v ms, want 1000", got)
	}
}
