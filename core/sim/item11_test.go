package sim

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dynosim/dynosim-web/core/replay"
	"github.com/dynosim/dynosim-web/core/report"
)

// Issue 29 item 11, end to end: a 50-minute run with a planner ticking
// every second (the floor) runs ~3,000 ticks; its report lists at most
// report.MaxPlannerTicks of them, counts them all and says which it lists,
// and its planner section stays under a megabyte.
func TestItem11PlannerSectionBoundedRun(t *testing.T) {
	cfg := `traffic:
  source: {type: synthetic, input_tokens: 64, output_tokens: 4}
  load: {type: constant_rate, requests_per_second: 2}
  stop: {requests: 6000}
engine:
  workers:
    aggregated:
      parallelism: {replicas: 1}
      timing: {type: fixed, prefill_ms: 300, decode_ms: 40}
      startup_seconds: 2
planner: {policy: enabled, scaling_policy: load_180_5, load_adjustment_interval_seconds: 1, max_num_gpus: 4}
evaluation: {sla: {ttft_ms: 300, itl_ms: 30}}
`
	rep, err := Predict(Inputs{Config: []byte(cfg), ConfigName: "long.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Planner
	if p == nil || p.NumTicks < 2*report.MaxPlannerTicks || len(p.Ticks) > report.MaxPlannerTicks || p.TickStride < 2 {
		t.Fatalf("planner section: %d ticks run, %d listed, stride %d", p.NumTicks, len(p.Ticks), p.TickStride)
	}
	for _, tk := range p.Ticks {
		if tk.Tick%p.TickStride != 0 {
			t.Fatalf("tick %d listed with stride %d", tk.Tick, p.TickStride)
		}
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 1<<20 {
		t.Errorf("planner section of %d bytes", len(b))
	}
}

// Issue 29 item 12: a KV transfer that would end past the virtual horizon
// names engine.kv_transfer.bandwidth_gb_per_second (on both handoff
// paths), not the arrivals; the error is still replay.ErrHorizon.
func TestItem12TransferPastHorizonNamesBandwidth(t *testing.T) {
	for _, kv := range []string{"{bandwidth_gb_per_second: 1e-300}", "{handoff: direct, bandwidth_gb_per_second: 1e-12}",
		"{bytes_per_token: 1e12, bandwidth_gb_per_second: 1e-6}"} {
		cfg := `traffic:
  source: {type: synthetic, input_tokens: 256, output_tokens: 4}
  load: {type: concurrency, concurrency: 2}
  stop: {requests: 4}
engine:
  mode: disaggregated
  kv_transfer: ` + kv + `
  workers:
    prefill: {timing: {type: polynomial}}
    decode: {timing: {type: polynomial}}
`
		_, err := Predict(Inputs{Config: []byte(cfg), ConfigName: "c.yaml"}, nil)
		if !errors.Is(err, replay.ErrHorizon) || !strings.Contains(err.Error(), "engine.kv_transfer.bandwidth_gb_per_second") ||
			strings.Contains(err.Error(), "arrival") {
			t.Errorf("kv_transfer %s: %v\nwant the horizon error naming engine.kv_transfer.bandwidth_gb_per_second", kv, err)
		}
	}
}
