package sim

import (
	"math"
	"testing"
)

// Issue 30 item 8 end to end: a two-class Mooncake trace (priority 0 and
// 10, alternating, arriving faster than one vLLM worker serves them) on
// one worker of the default model and GPU. Under scheduler.policy fcfs the
// classes wait alike; under priority the priority-0 class goes first and
// its mean TTFT drops well below the other's. With the KV router's queue
// the router holds requests too, and orders them by Dynamo's rule
// (larger priority first: spec §10.11), which then decides the order
// whatever the engine policy: Dynamo and vLLM read the field in opposite
// directions.
func TestItem30_8TwoClassTraceReplay(t *testing.T) {
	const gap = 40.0 // ms between arrivals
	trace := priorityTrace(400, gap, "")
	for _, tc := range []struct {
		name, config   string
		minGap, maxGap float64 // bounds on mean TTFT(priority 10) / mean TTFT(priority 0)
	}{
		{"fcfs", "", 0.8, 1.25},
		{"priority", "engine: {workers: {aggregated: {scheduler: {policy: priority}}}}\n", 2, math.Inf(1)},
		{"kv router queue, fcfs engine", "router: {policy: kv_router, kv: {queue: {threshold: 0.1}}}\n", 0, 0.5},
		{"kv router queue, priority engine", "router: {policy: kv_router, kv: {queue: {threshold: 0.1}}}\nengine: {workers: {aggregated: {scheduler: {policy: priority}}}}\n", 0, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := "traffic: {source: {type: trace, format: mooncake, paths: [t.jsonl], block_size: 512}}\n" + tc.config
			rep, err := Predict(Inputs{Config: []byte(cfg), Trace: trace, TraceName: "t.jsonl", CapturePerRequest: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var sum [2]float64
			var n [2]int
			for _, r := range rep.Requests() {
				if r.TTFTMs == nil {
					t.Fatalf("request %d has no first token", r.UUID)
				}
				k := int(math.Round(r.ArrivalTimeMs/gap)) % 2
				sum[k] += *r.TTFTMs
				n[k]++
			}
			if n[0] != 200 || n[1] != 200 {
				t.Fatalf("classes %v, want 200 each", n)
			}
			hi, lo := sum[0]/200, sum[1]/200
			t.Logf("%s: mean TTFT priority 0 %.1f ms, priority 10 %.1f ms (ratio %.2f)", tc.name, hi, lo, lo/hi)
			if r := lo / hi; r < tc.minGap || r > tc.maxGap {
				t.Errorf("TTFT ratio %.2f, want in [%v, %v]", r, tc.minGap, tc.maxGap)
			}
		})
	}
}
