package sim

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/dynosim/dynosim-web/core/config"
	"github.com/dynosim/dynosim-web/core/engine"
	"github.com/dynosim/dynosim-web/core/report"
)

// fuzzTrace is the small Mooncake trace of the seeds: two sessions sharing a
// prefix, one with a follow-up turn.
const fuzzTrace = `{"session_id": "a", "timestamp": 0, "input_length": 40, "output_length": 3, "hash_ids": [1, 2, 3]}
{"session_id": "b", "timestamp": 5, "input_length": 30, "output_length": 2, "hash_ids": [1, 2]}
{"session_id": "a", "delay": 7, "input_length": 60, "output_length": 4, "hash_ids": [1, 2, 3, 4]}
`

// fuzzFloat formats v as YAML (NaN and infinities in YAML's spelling).
func fuzzFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return ".nan"
	case math.IsInf(v, 1):
		return ".inf"
	case math.IsInf(v, -1):
		return "-.inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// fuzzSize keeps a size in the cheap part of the valid range: values past
// the config's bound stay (they are fast errors), large valid ones shrink.
func fuzzSize(v int64, cheap, bound int64) int64 {
	if v > cheap && v <= bound {
		return cheap
	}
	return v
}

// FuzzPredict drives the whole Predict path (config, trace, timing, engines,
// replay, report) with configs built from fuzz values: every input gives a
// report or an error, never a panic, and every request record's times are
// ordered arrival ≤ first_admit ≤ first_token ≤ last_token ≤ terminal.
// Execs stay small: at most 3 workers, 4096 blocks, 20 requests, 4 KiB of
// trace and 20,000 passes.
func FuzzPredict(f *testing.F) {
	profile, err := os.ReadFile("../../timing/testdata/small.npz")
	if err != nil {
		f.Fatal(err)
	}
	tr := []byte(fuzzTrace)
	type seed struct {
		backend, timingKind, load, nextn uint8
		speedup, prefill, decode, rate   float64
		blocks, blockSize, replicas      int64
		tensor, stop, in, out            int64
		trace                            []byte
	}
	for _, s := range []seed{
		{0, 0, 0, 0, 1, 10, 5, 1, 256, 16, 2, 1, 10, 64, 4, tr},
		{1, 1, 1, 0, 1, 10, 5, 1, 256, 4, 1, 1, 10, 64, 4, tr},
		{2, 2, 2, 2, 2, 10, 5, 50, 64, 32, 3, 1, 10, 100, 8, nil},
		{0, 3, 3, 1, 1, 10, 5, 5, 0, 0, 1, 1, 10, 64, 4, nil}, // profile timing, default capacity
		{0, 4, 1, 0, 1, 10, 5, 1, 32, 16, 1, 2, 5, 64, 4, tr}, // roofline
		// Issue 11's hostile values.
		{0, 0, 0, 0, 1e-300, 10, 5, 1, 256, 16, 1, 1, 10, 64, 4, tr},
		{0, 0, 0, 0, 1, 1e300, 5, 1, 256, 16, 1, 1, 10, 64, 4, tr},
		{0, 0, 0, 0, 1, 1e12, 1e12, 1, 256, 16, 1, 1, 10, 64, 4, nil},
		{0, 0, 0, 0, 1, math.Inf(1), math.NaN(), 1, 256, 16, 1, 1, 10, 64, 4, nil},
		{0, 0, 2, 0, 1, 10, 5, 1e-300, 256, 16, 1, 1, 10, 64, 4, nil},
		{0, 0, 3, 0, 1, 10, 5, 0, 256, 16, 1, 1, 10, 64, 4, nil},
		{0, 0, 0, 0, 1, 10, 5, 1, 1 << 40, 16, 1, 1, 10, 64, 4, nil},
		{0, 0, 0, 0, 1, 10, 5, 1, 256, 16, 1 << 40, 1, 10, 64, 4, nil},
		{0, 4, 0, 0, 1, 10, 5, 1, 256, 16, 1, 1 << 40, 10, 64, 4, nil},
		{0, 0, 0, 0, 1, 10, 5, 1, 256, 16, 1, 1, 1 << 40, 64, 4, nil},
		{0, 0, 0, 0, 1, 10, 5, 1, 256, 16, 1, 1, 10, 1 << 40, 1 << 40, nil},
		{0, 0, 0, 9, 1, 10, 5, 1, 256, 16, 1, 1, 10, 64, 4, nil},
		{0, 0, 0, 0, 1, 10, 5, 1, 256, 16, 1, 1, 10, 64, 4, []byte(`{"timestamp": 1e15, "output_length": 1, "hash_ids": [1]}`)},
		{0, 0, 0, 0, 1, 10, 5, 1, 256, 16, 1, 1, 10, 64, 4, []byte(`{"timestamp": 0, "output_length": 4294967297, "hash_ids": [1]}`)},
		{0, 0, 0, 0, 1, 10, 5, 1, 256, 16, 1, 1, 10, 64, 4, []byte("{\"session_id\": 1, \"timestamp\": 0, \"output_length\": 1, \"hash_ids\": [1]}\n{\"session_id\": 1, \"delay\": 3e12, \"output_length\": 1, \"hash_ids\": [1]}\n{\"session_id\": 1, \"delay\": 3e12, \"output_length\": 1, \"hash_ids\": [1]}")},
		{0, 0, 0, 0, 1, 10, 5, 1, 256, 16, 1, 1, 10, 64, 4, []byte("\xEF\xBB\xBF{\"timestamp\": 0, \"output_length\": 1, \"hash_ids\": [1]}")},
		{0, 0, 4, 0, 1e-300, 10, 5, 1, 256, 16, 1, 1, 10, 64, 4, tr}, // trace arrivals sped up by 1/1e-300
		{0, 4, 12, 0, 1, 10, 5, 1, 256, 16, 1, 1, 10, 64, 1, tr},     // async scheduling, trace arrivals, roofline
		{1, 0, 9, 3, 1, 10, 5, 0.2, 256, 16, 2, 1, 10, 64, 4, nil},   // async, ramped closed loop, SGLang
		{6, 0, 0, 0, 1, 10, 5, 1, 24, 16, 2, 1, 10, 64, 4, tr},       // KVBM G2
		{9, 1, 1, 1, 1, 10, 5, 1, 24, 4, 2, 1, 10, 64, 4, tr},        // G2 + G3, speculation
		{14, 4, 2, 0, 1, 10, 5, 20, 32, 16, 2, 1, 20, 300, 8, nil},   // TRT-LLM, G2 + G3 + G4, roofline
	} {
		f.Add(s.backend, s.timingKind, s.load, s.nextn, s.speedup, s.prefill, s.decode, s.rate, s.blocks, s.blockSize, s.replicas, s.tensor, s.stop, s.in, s.out, s.trace)
	}
	f.Fuzz(func(t *testing.T, backend, timingKind, load, nextn uint8, speedup, prefill, decode, rate float64,
		blocks, blockSize, replicas, tensor, stop, in, out int64, trace []byte) {
		if len(trace) > 4096 {
			return
		}
		blocks = fuzzSize(blocks, 4096, engine.MaxBlocks)
		replicas = fuzzSize(replicas, 3, config.MaxReplicas)
		tensor = fuzzSize(tensor, 8, config.MaxParallel)
		stop = fuzzSize(stop, 20, config.MaxRequests)
		in = fuzzSize(in, 2048, 1<<24)
		out = fuzzSize(out, 64, 1<<24)
		backends := []string{"vllm", "sglang", "trtllm"}
		// The planner in the loop: off, or load-based and hybrid ticking
		// every second (the SLA below is tight, so they scale).
		planners := []string{"{policy: disabled}",
			"{policy: enabled, scaling_policy: load_180_5, load_adjustment_interval_seconds: 1, max_num_gpus: 16}",
			"{policy: enabled, scaling_policy: hybrid_180_5, throughput_adjustment_interval_seconds: 3, load_adjustment_interval_seconds: 1, max_num_gpus: 16}"}
		timings := []string{
			fmt.Sprintf("{type: fixed, prefill_ms: %s, decode_ms: %s, speedup: %s}", fuzzFloat(prefill), fuzzFloat(decode), fuzzFloat(speedup)),
			fmt.Sprintf("{type: polynomial, speedup: %s}", fuzzFloat(speedup)),
			fmt.Sprintf("{type: polynomial, decode_speedup: %s}", fuzzFloat(speedup)),
			"{type: profile, path: p.npz}",
			fmt.Sprintf("{type: default, speedup: %s}", fuzzFloat(speedup)),
		}
		loads := []string{
			"{type: concurrency, concurrency: 4}",
			fmt.Sprintf("{type: concurrency, concurrency: %d, ramp_up_seconds: %s}", max(1, int(nextn)), fuzzFloat(rate)),
			fmt.Sprintf("{type: poisson, requests_per_second: %s, seed: 3}", fuzzFloat(rate)),
			fmt.Sprintf("{type: constant_rate, requests_per_second: %s}", fuzzFloat(rate)),
			fmt.Sprintf("{type: trace_timestamps, speedup: %s}", fuzzFloat(speedup)),
		}
		// KVBM lower tiers: none, G2, G2 + G3, G2 + G3 + G4 (small, so
		// they evict and stage).
		tiers := []string{"", ", g1_backend: kvbm, tiers: {g2: {blocks: 8}}",
			", g1_backend: kvbm, tiers: {offload_batch_blocks: 2, g2: {blocks: 6}, g3: {blocks: 40, read_gb_per_second: 0.5}}",
			", g1_backend: kvbm, tiers: {g2: {blocks: 4, write_gb_per_second: 0}, g3: {blocks: 10}, g4: {enabled: true}}"}[backend>>2&3]
		capacity := fmt.Sprintf("{type: fixed, blocks: %d}", blocks)
		if blocks <= 0 {
			capacity = "{type: default}"
		}
		source := fmt.Sprintf("{type: synthetic, input_tokens: %d, output_tokens: %d}", in, out)
		if len(trace) > 0 {
			source = "{type: trace, format: mooncake, paths: [t.jsonl], block_size: 16}"
		}
		spec := "{kind: none}"
		if nextn > 0 {
			spec = fmt.Sprintf("{kind: mtp, num_speculative_tokens: %d, seed: 1}", nextn)
		}
		cfg := fmt.Sprintf(`traffic:
  source: %s
  load: %s
  stop: {requests: %d}
engine:
  backend: %s
  speculation: %s
  workers:
    aggregated:
      parallelism: {replicas: %d, tensor: %d}
      scheduler: {async_scheduling: %t}
      kv_cache: {block_size: %d, capacity: %s%s}
      timing: %s
      startup_seconds: %d
planner: %s
evaluation: {sla: {ttft_ms: 200, itl_ms: 20}}
`, source, loads[int(load)%len(loads)], stop, backends[int(backend)%len(backends)], spec, replicas, tensor, load&8 != 0, blockSize, capacity, tiers, timings[int(timingKind)%len(timings)],
			int(load>>5)%3, planners[int(load>>4)%len(planners)])
		files := map[string][]byte{"t.jsonl": trace, "p.npz": profile}
		inputs := Inputs{Config: []byte(cfg), ConfigName: "f.yaml", CapturePerRequest: true, Watch: 1,
			Limits: Limits{MaxPasses: 20000, MaxRequests: 50},
			ReadFile: func(p string) ([]byte, error) {
				if b, ok := files[p]; ok {
					return b, nil
				}
				return nil, fmt.Errorf("%s: no such file", p)
			}}
		rep, err := Predict(inputs, nil)
		if err != nil {
			t.Log(err)
			return
		}
		t.Logf("%d requests", len(rep.Requests()))
		breakdownsAddUp(t, rep)
		if ev := rep.Timeline.Events; ev[0].Event != "arrival" || !slices.IsSortedFunc(ev, func(a, b report.TimelineEvent) int { return cmp.Compare(a.TMs, b.TMs) }) {
			t.Fatalf("timeline of request %d: %+v", rep.Timeline.UUID, ev)
		}
		for _, r := range rep.Requests() {
			last, lastName := r.ArrivalTimeMs, "arrival_time_ms"
			for _, c := range []struct {
				name string
				v    *float64
			}{{"first_admit_ms", r.FirstAdmitMs}, {"first_token_ms", r.FirstTokenMs}, {"last_token_ms", r.LastTokenMs}, {"terminal_time_ms", r.TerminalTimeMs}} {
				if c.v == nil {
					continue
				}
				if !(*c.v >= last) {
					t.Fatalf("request %v: %s %v before %s %v\n%s", r.UUID, c.name, *c.v, lastName, last, cfg)
				}
				last, lastName = *c.v, c.name
			}
		}
	})
}
